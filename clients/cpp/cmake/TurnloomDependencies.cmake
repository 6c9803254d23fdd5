# Finds msgpack-cxx and standalone asio and wraps each in an INTERFACE target
# (turnloom_deps::msgpack, turnloom_deps::asio) with the defines this client needs.
#
# msgpack-cxx 6.x installs the CMake package `msgpack-cxx`, used when found. The 4.x/5.x one
# (`msgpackc-cxx`, Debian 12's) unconditionally requires Boost although MSGPACK_NO_BOOST makes
# the headers Boost-free, so for those the header is looked up directly. asio ships no CMake
# package at all: its header is looked up.
if(NOT TARGET turnloom_deps::msgpack)
  find_package(msgpack-cxx CONFIG QUIET)
  if(TARGET msgpack-cxx)
    get_target_property(TURNLOOM_MSGPACK_INCLUDE_DIR msgpack-cxx INTERFACE_INCLUDE_DIRECTORIES)
  else()
    find_path(TURNLOOM_MSGPACK_INCLUDE_DIR msgpack.hpp HINTS ENV MSGPACK_ROOT PATH_SUFFIXES include)
  endif()
  find_path(TURNLOOM_ASIO_INCLUDE_DIR asio.hpp HINTS ENV ASIO_ROOT PATH_SUFFIXES include)
  set(_missing "")
  if(NOT TURNLOOM_MSGPACK_INCLUDE_DIR)
    list(APPEND _missing "msgpack-cxx (msgpack.hpp; Debian/Ubuntu: libmsgpack-cxx-dev)")
  endif()
  if(NOT TURNLOOM_ASIO_INCLUDE_DIR)
    list(APPEND _missing "standalone asio (asio.hpp; Debian/Ubuntu: libasio-dev)")
  endif()
  if(_missing)
    message(FATAL_ERROR "turnloom C++ client: missing ${_missing}. Install with: "
      "sudo apt-get install -y g++ cmake libmsgpack-cxx-dev libasio-dev libssl-dev "
      "(or point MSGPACK_ROOT / ASIO_ROOT at their install prefixes)")
  endif()

  add_library(turnloom_deps_msgpack INTERFACE)
  add_library(turnloom_deps::msgpack ALIAS turnloom_deps_msgpack)
  target_include_directories(turnloom_deps_msgpack SYSTEM INTERFACE ${TURNLOOM_MSGPACK_INCLUDE_DIR})
  target_compile_definitions(turnloom_deps_msgpack INTERFACE MSGPACK_NO_BOOST)

  add_library(turnloom_deps_asio INTERFACE)
  add_library(turnloom_deps::asio ALIAS turnloom_deps_asio)
  target_include_directories(turnloom_deps_asio SYSTEM INTERFACE ${TURNLOOM_ASIO_INCLUDE_DIR})
  target_compile_definitions(turnloom_deps_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED)
endif()
