#!/usr/bin/env bash
# `make csharp` (from the repository root): build the C# client with Debian's Mono and run its
# NUnit suite against the real server, through tests/test_csharp_client.py (which also makes
# the msgpack cross-test vectors with Python and checks the C# side's answers).
#
#   make_csharp.sh test PYTHON   install if needed, then run the pytest driver with PYTHON
#   make_csharp.sh build         compile into clients/csharp/build/ (the driver calls this)
#   make_csharp.sh install       only make sure mcs and nunit-console are installed
#
# Missing mono-devel / nunit-console / openssl (the TLS tests make throwaway certificates) are
# installed with apt-get when running as root on Debian or Ubuntu; otherwise the exact command is
# printed and the C# part is skipped: loudly, and as a failure when $CI is set (CI must always
# run it). The folder is named Tools~ so that Unity does not import it.
set -euo pipefail

mode=${1:-test}
python=${2:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)
packages="mono-devel nunit-console openssl"
build="$here/build"

missing() {
  local gone=""
  command -v mcs >/dev/null 2>&1 || gone+=" mcs"
  command -v mono >/dev/null 2>&1 || gone+=" mono"
  command -v nunit-console >/dev/null 2>&1 || gone+=" nunit-console"
  command -v openssl >/dev/null 2>&1 || gone+=" openssl"  # the TLS tests' certificates
  pkg-config --exists nunit 2>/dev/null || gone+=" nunit.pc"
  echo "$gone"
}

ensure_installed() {
  local gone
  gone=$(missing)
  [ -z "$gone" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "C# client: installing (missing:$gone): $packages"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
    gone=$(missing)
    [ -z "$gone" ] && return 0
  fi
  cat >&2 <<MSG

************************************************************************************
*  THE C# CLIENT TESTS WERE NOT RUN: missing$gone
*  Install them, then run 'make csharp':
*      sudo apt-get install -y $packages
************************************************************************************

MSG
  if [ -n "${CI:-}" ]; then
    echo "CI is set: failing, because CI must run the C# tests." >&2
    exit 1
  fi
  exit 0
}

# Debian's mcs speaks C# up to 7.2 (the code keeps to what it shares with C# 7.3); the runtime
# assembly uses only what .NET Standard 2.0 has.
compile() {
  mkdir -p "$build"
  local common=(-langversion:7.2 -warnaserror+ -debug -optimize+ -nologo)
  local framework
  framework=$(pkg-config --libs nunit | tr ' ' '\n' | grep nunit.framework | sed 's/^-r://')
  mcs "${common[@]}" -target:library -out:"$build/Turnloom.Runtime.dll" -recurse:"$here/Runtime/*.cs"
  # The Unity components and the sample, against small stand-ins of the UnityEngine types they
  # use: checks that they compile with UNITY_5_3_OR_NEWER defined (Unity compiles them for real).
  mcs "${common[@]}" -target:library -define:UNITY_5_3_OR_NEWER -out:"$build/Turnloom.UnityCheck.dll" \
    -recurse:"$here/Runtime/*.cs" "$here/Tools~/UnityStandIns.cs" "$here/Samples~/Shopkeeper/Shopkeeper.cs"
  mcs "${common[@]}" -target:library -out:"$build/Turnloom.Tests.dll" -r:"$build/Turnloom.Runtime.dll" \
    -r:System.Core.dll -r:"$framework" -recurse:"$here/Tests/*.cs"
  # The components' tests (Tests/Unity/), run against the stand-ins: the same runtime as above,
  # with the components, from Turnloom.UnityCheck.dll.
  mcs "${common[@]}" -target:library -define:UNITY_5_3_OR_NEWER -define:TURNLOOM_UNITY_STANDINS \
    -out:"$build/Turnloom.UnityTests.dll" -r:"$build/Turnloom.UnityCheck.dll" -r:System.Core.dll \
    -r:"$framework" "$here/Tests/Support.cs" -recurse:"$here/Tests/Unity/*.cs"
  cp "$framework" "$build/"
  # The programs of the cross-client transcript test and of bench/csharp_bench.py.
  mcs "${common[@]}" -target:exe -out:"$build/Story.exe" -r:"$build/Turnloom.Runtime.dll" "$here/Tools~/Story.cs"
  mcs "${common[@]}" -target:exe -out:"$build/Bench.exe" -r:"$build/Turnloom.Runtime.dll" "$here/Tools~/Bench.cs"
}

ensure_installed
case "$mode" in
  install) ;;
  build) compile ;;
  test) cd "$repo" && TURNLOOM_CSHARP_TESTS=1 "$python" -m pytest -p no:cacheprovider tests/test_csharp_client.py ;;
  *) echo "usage: $0 test|build|install [PYTHON]" >&2; exit 2 ;;
esac
