# `cmake --install build --prefix P`: the shared library, the public headers (include/attnbench/) and the package
# (attnbenchConfig.cmake, attnbenchConfigVersion.cmake, attnbenchTargets.cmake) under
# P/lib/cmake/attnbench, for find_package(attnbench CONFIG).
include(CMakePackageConfigHelpers)

set(attnbench_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/attnbench)
install(TARGETS attnbench_shared EXPORT attnbenchTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/attnbench ${PROJECT_BINARY_DIR}/include/attnbench
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT attnbenchTargets NAMESPACE attnbench:: DESTINATION ${attnbench_package_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/attnbenchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attnbenchConfig.cmake INSTALL_DESTINATION ${attnbench_package_dir})
# 0.x: a minor version may break the interface, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnbenchConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnbenchConfig.cmake
  ${PROJECT_BINARY_DIR}/attnbenchConfigVersion.cmake DESTINATION ${attnbench_package_dir})
