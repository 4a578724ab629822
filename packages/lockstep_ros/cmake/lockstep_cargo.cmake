# lockstep_cargo_build(CRATES <crate>... [BINARIES <bin>...] [PATH_BINARIES <bin>...] [LIBRARIES <crate>...])
#
# Builds the named crates of the Lockstep cargo workspace with cargo and installs their binaries:
# BINARIES into lib/<package> (so `ros2 run <package> <bin>` finds them), PATH_BINARIES into bin/, and the
# shared libraries (cdylib) of the LIBRARIES crates into lib/ as lib<crate>.so.
# Every package shares one cargo target directory (<build base>/cargo_target, or $LOCKSTEP_CARGO_TARGET_DIR),
# so r2r and its generated bindings are compiled once per colcon build, not once per package. And every
# package asks cargo for the same thing, the binaries of the whole workspace: cargo unifies dependency features
# per invocation, so `-p <this package's crates>` would give each package its own feature set and compile
# r2r, tokio and the crates in between once per package (8 to 14 times each). The first package (lockstep_ros)
# builds everything; for the others cargo finds it up to date. CRATES documents which crates the package
# ships and is checked to be workspace members by cargo.
# The profile is release unless LOCKSTEP_CARGO_PROFILE says otherwise.
# r2r caches its generated bindings under a hash of AMENT_PREFIX_PATH and CMAKE_PREFIX_PATH. colcon gives
# each package a different list (its own dependencies' install prefixes), which would make r2r regenerate and
# recompile per package. Only prefixes that hold interface packages matter to r2r, so pass just those.
function(_lockstep_interface_prefixes env_var out_var)
  string(REPLACE ":" ";" prefixes "$ENV{${env_var}}")
  set(kept "")
  foreach(prefix IN LISTS prefixes)
    if(prefix AND EXISTS "${prefix}/share/ament_index/resource_index/rosidl_interfaces")
      list(APPEND kept "${prefix}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES kept)
  string(REPLACE ";" ":" kept "${kept}")
  set(${out_var} "${kept}" PARENT_SCOPE)
endfunction()

function(lockstep_cargo_build)
  cmake_parse_arguments(ARG "" "" "CRATES;BINARIES;PATH_BINARIES;LIBRARIES" ${ARGN})
  find_program(CARGO_EXECUTABLE cargo REQUIRED)

  if(DEFINED ENV{LOCKSTEP_CARGO_TARGET_DIR})
    set(target_dir "$ENV{LOCKSTEP_CARGO_TARGET_DIR}")
  else()
    get_filename_component(target_dir "${CMAKE_BINARY_DIR}/../cargo_target" ABSOLUTE)
  endif()
  if(DEFINED ENV{LOCKSTEP_CARGO_PROFILE})
    set(profile "$ENV{LOCKSTEP_CARGO_PROFILE}")
  else()
    set(profile "release")
  endif()
  if(profile STREQUAL "dev")
    set(profile_dir "debug")
  else()
    set(profile_dir "${profile}")
  endif()

  set(package_args "")
  foreach(crate IN LISTS ARG_CRATES)
    list(APPEND package_args "-p" "${crate}")
  endforeach()

  # LOCKSTEP_CARGO_AMENT_PREFIX_PATH / LOCKSTEP_CARGO_CMAKE_PREFIX_PATH, when set, are what cargo sees instead:
  # a workspace already built by cargo outside colcon (with the same interfaces) is then up to date here too.
  if(DEFINED ENV{LOCKSTEP_CARGO_AMENT_PREFIX_PATH} AND DEFINED ENV{LOCKSTEP_CARGO_CMAKE_PREFIX_PATH})
    set(ament_prefixes "$ENV{LOCKSTEP_CARGO_AMENT_PREFIX_PATH}")
    set(cmake_prefixes "$ENV{LOCKSTEP_CARGO_CMAKE_PREFIX_PATH}")
  else()
    _lockstep_interface_prefixes(AMENT_PREFIX_PATH ament_prefixes)
    _lockstep_interface_prefixes(CMAKE_PREFIX_PATH cmake_prefixes)
  endif()
  # The targets cargo builds: the workspace's binaries, or LOCKSTEP_CARGO_BUILD_ARGS (the arguments that
  # build gave, since cargo resolves features per set of targets).
  if(DEFINED ENV{LOCKSTEP_CARGO_BUILD_ARGS})
    separate_arguments(build_args UNIX_COMMAND "$ENV{LOCKSTEP_CARGO_BUILD_ARGS}")
  else()
    set(build_args "--bins")
  endif()

  # cargo decides what is up to date; always ask it.
  add_custom_target(${PROJECT_NAME}_cargo ALL
    COMMAND ${CMAKE_COMMAND} -E env "CARGO_TARGET_DIR=${target_dir}"
            "AMENT_PREFIX_PATH=${ament_prefixes}" "CMAKE_PREFIX_PATH=${cmake_prefixes}"
            ${CARGO_EXECUTABLE} build --profile ${profile} --workspace ${build_args} ${package_args}
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    COMMENT "cargo build --profile ${profile} --workspace ${build_args} (${PROJECT_NAME}: ${ARG_CRATES})"
    USES_TERMINAL)

  # A cdylib is no binary: `--bins` leaves it out, so build the libraries too, after the binaries, with the
  # same targets besides (the same features: nothing compiled again).
  set(lib_args ${build_args})
  if(NOT "--lib" IN_LIST lib_args)
    list(APPEND lib_args "--lib")
  endif()
  foreach(lib IN LISTS ARG_LIBRARIES)
    add_custom_target(${PROJECT_NAME}_${lib}_lib ALL
      COMMAND ${CMAKE_COMMAND} -E env "CARGO_TARGET_DIR=${target_dir}"
              "AMENT_PREFIX_PATH=${ament_prefixes}" "CMAKE_PREFIX_PATH=${cmake_prefixes}"
              ${CARGO_EXECUTABLE} build --profile ${profile} --workspace ${lib_args}
      WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
      COMMENT "cargo build --profile ${profile} --workspace ${lib_args} (for lib${lib}.so)"
      USES_TERMINAL)
    add_dependencies(${PROJECT_NAME}_${lib}_lib ${PROJECT_NAME}_cargo)
    install(FILES "${target_dir}/${profile_dir}/lib${lib}.so" DESTINATION lib)
  endforeach()
  foreach(bin IN LISTS ARG_BINARIES)
    install(PROGRAMS "${target_dir}/${profile_dir}/${bin}" DESTINATION lib/${PROJECT_NAME})
  endforeach()
  foreach(bin IN LISTS ARG_PATH_BINARIES)
    install(PROGRAMS "${target_dir}/${profile_dir}/${bin}" DESTINATION bin)
  endforeach()
endfunction()
