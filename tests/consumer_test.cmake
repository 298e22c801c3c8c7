# ctest's consumer_test: install this build into a fresh prefix, then configure, build and run
# tests/consumer against it. Run as `cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P`.
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "consumer_test: failed (${status}): ${ARGN}")
  endif()
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G Ninja
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
# The ring consumer, under mpirun with 2 ranks, where the install has attnbench::ring.
if(EXISTS ${WORK_DIR}/build/consumer_ring)
  step(${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
       ${MPIEXEC} -np 2 --oversubscribe ${WORK_DIR}/build/consumer_ring)
elseif(RING)
  message(FATAL_ERROR "consumer_test: this build has ring attention, the installed package did not give it")
endif()
