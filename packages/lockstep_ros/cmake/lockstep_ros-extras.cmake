# Makes lockstep_cargo_build() available to every package that does find_package(lockstep_ros).
include("${lockstep_ros_DIR}/lockstep_cargo.cmake")
