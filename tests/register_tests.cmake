# Registers the Catch2 test cases with CTest: one CTest test per Catch2 test case where the Catch2
# v2 headers in use come with their CMake module (Debian's package), otherwise the whole binary as
# one test (staged headers: another Catch2's module would not understand a v2 binary). GPU tests carry the tag
# [cuda]; they are registered under the label `cuda` and report "skipped" (exit code 77) when no
# GPU is present. Every CPU test runs with `--warn NoTests`, so that a name that matches no test case
# fails instead of passing with nothing run (a test case name must not hold a ';', which CMake
# would split into two names that match nothing).
if(CATCH2_INCLUDE STREQUAL "/usr/include")
  find_file(CATCH2_CMAKE_MODULE Catch.cmake HINTS /usr/lib/cmake/Catch2 NO_DEFAULT_PATH)
endif()
if(CATCH2_CMAKE_MODULE)
  include(${CATCH2_CMAKE_MODULE})
  catch_discover_tests(pathbench_tests TEST_SPEC "~[cuda]" EXTRA_ARGS --warn NoTests PROPERTIES LABELS cpu)
else()
  add_test(NAME cpu_tests COMMAND pathbench_tests "~[cuda]" --warn NoTests)
  set_tests_properties(cpu_tests PROPERTIES LABELS cpu)
endif()
add_test(NAME cuda_tests COMMAND pathbench_tests --require-gpu "[cuda]")
set_tests_properties(cuda_tests PROPERTIES LABELS cuda SKIP_RETURN_CODE 77)
# A real single-node Slurm (munged, slurmctld, slurmd started by the script as root): array jobs of
# `pathbench slurm`, a cancelled task and a resubmission. Skipped (77) without Slurm, munge or root.
add_test(NAME slurm_array
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/slurm/run_slurm_test.sh $<TARGET_FILE:pathbench>)
set_tests_properties(slurm_array PROPERTIES LABELS slurm SKIP_RETURN_CODE 77 TIMEOUT 900)
