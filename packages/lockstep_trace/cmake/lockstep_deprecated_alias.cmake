# lockstep_deprecated_alias(<executable> NEW_PACKAGE <package> NEW_PREFIX <its install prefix>)
#
# For an executable that moved from this package to <package>: installs lib/<this package>/<executable>, a
# script that says on stderr that the old name is deprecated and execs <package>'s <executable>, so
# `ros2 run <this package> <executable>` and launch files naming this package keep working for one release.
# The script looks for the executable at the path relative to itself that NEW_PREFIX gives (relative, so an
# install space that is moved as a whole still works), then in each prefix of AMENT_PREFIX_PATH.
#
# Used by lockstep_trace (the example modules, now lockstep_examples') and lockstep_replay (the bag player, now
# lockstep_bag_player's), which finds it through find_package(lockstep_trace). It goes with the aliases.
set(_lockstep_deprecated_alias_template "${CMAKE_CURRENT_LIST_DIR}/deprecated_alias.sh.in")

function(lockstep_deprecated_alias executable)
  cmake_parse_arguments(ARG "" "NEW_PACKAGE;NEW_PREFIX" "" ${ARGN})
  if(NOT ARG_NEW_PACKAGE OR NOT ARG_NEW_PREFIX)
    message(FATAL_ERROR "lockstep_deprecated_alias(${executable}): NEW_PACKAGE and NEW_PREFIX are required")
  endif()
  file(RELATIVE_PATH alias_to_target "${CMAKE_INSTALL_PREFIX}/lib/${PROJECT_NAME}"
       "${ARG_NEW_PREFIX}/lib/${ARG_NEW_PACKAGE}")
  set(old_package "${PROJECT_NAME}")
  set(new_package "${ARG_NEW_PACKAGE}")
  set(script "${CMAKE_CURRENT_BINARY_DIR}/deprecated_alias/${executable}")
  configure_file("${_lockstep_deprecated_alias_template}" "${script}" @ONLY)
  install(PROGRAMS "${script}" DESTINATION lib/${PROJECT_NAME})
endfunction()
