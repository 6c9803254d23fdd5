#!/usr/bin/env bash
# `make cpp` and `make cpp-sanitize` (from the repository root): configure, build and run the
# C++ client's ctest suite against the real server.
#
#   tools/make_cpp.sh test     PYTHON   build clients/cpp/build/default and run ctest
#   tools/make_cpp.sh sanitize PYTHON   the same under ThreadSanitizer (build/tsan) and
#                                       AddressSanitizer (build/asan)
#   tools/make_cpp.sh install           only make sure the toolchain and headers are installed
#
# PYTHON must have the turnloom package (the Makefile passes the repository's .venv).
# Missing g++ / cmake / msgpack-cxx / asio / OpenSSL (libssl-dev for the library's TLS, the
# openssl command for the TLS tests' throwaway certificates) are installed with apt-get when
# running as root on Debian or Ubuntu; otherwise the exact command is printed and the C++ part
# is skipped — loudly, and as a failure when $CI is set (CI must always run it).
set -euo pipefail

mode=${1:-test}
python=${2:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
packages="g++ cmake libmsgpack-cxx-dev libasio-dev libssl-dev openssl"
jobs=${CPP_JOBS:-2}

# What is missing, as words ("" when all is there). The headers are checked by compiling them,
# wherever they are installed.
missing() {
  local gone=""
  command -v cmake >/dev/null 2>&1 || gone+=" cmake"
  command -v openssl >/dev/null 2>&1 || gone+=" openssl"
  if ! command -v c++ >/dev/null 2>&1; then
    echo "${gone} c++-compiler"
    return
  fi
  printf '#include <msgpack.hpp>\n' | c++ -std=c++17 -DMSGPACK_NO_BOOST -x c++ -fsyntax-only - \
    >/dev/null 2>&1 || gone+=" msgpack-cxx"
  printf '#include <asio.hpp>\n' | c++ -std=c++17 -DASIO_STANDALONE -x c++ -fsyntax-only - \
    >/dev/null 2>&1 || gone+=" asio"
  printf '#include <openssl/ssl.h>\n' | c++ -std=c++17 -x c++ -fsyntax-only - \
    >/dev/null 2>&1 || gone+=" libssl-dev"
  echo "$gone"
}

ensure_installed() {
  local gone
  gone=$(missing)
  [ -z "$gone" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "C++ client: installing${gone:+ (missing:$gone)}: $packages"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages
    gone=$(missing)
    [ -z "$gone" ] && return 0
  fi
  cat >&2 <<MSG

************************************************************************************
*  THE C++ CLIENT TESTS WERE NOT RUN: missing$gone
*  Install them, then run 'make cpp':
*      sudo apt-get install -y $packages
************************************************************************************

MSG
  if [ -n "${CI:-}" ]; then
    echo "CI is set: failing, because CI must run the C++ tests." >&2
    exit 1
  fi
  exit 0
}

# configure + build + ctest in build/NAME, with extra cmake arguments.
run_suite() {
  local name=$1
  shift
  local dir="$here/build/$name" generator=()
  command -v ninja >/dev/null 2>&1 && [ ! -f "$dir/Makefile" ] && generator=(-G Ninja)
  local start=$SECONDS
  cmake -S "$here" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug \
    -DTURNLOOM_BUILD_TESTS=ON -DTURNLOOM_PYTHON="$python" "$@" >/dev/null
  cmake --build "$dir" --parallel "$jobs"
  echo "C++ client ($name): built in $((SECONDS - start)) s"
  (cd "$dir" && ctest --output-on-failure --parallel "$jobs")
}

ensure_installed
case "$mode" in
  install) ;;
  test) run_suite default ;;
  sanitize)
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      run_suite tsan -DTURNLOOM_SANITIZER=thread
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" run_suite asan -DTURNLOOM_SANITIZER=address
    ;;
  *) echo "usage: $0 test|sanitize|install [PYTHON]" >&2; exit 2 ;;
esac
