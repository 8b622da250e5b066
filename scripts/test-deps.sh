#!/usr/bin/env bash
# make test's set-up: install what the tests need and a fresh Debian machine
# lacks, the same way make run does (apt-get when root, else the command to run).
#   - redis-server is required: every store test runs against a real one;
#   - beanstalkd (the differential test's oracle), PHP with pheanstalk and
#     memcached, Python with pymemcache and libmemcached-tools (kestrel's
#     protocol through real memcache clients), ZooKeeper with Python's kazoo
#     (the server sets), Apache Thrift's compiler with its Python library
#     (kestrel's Thrift protocol through a generated client) and Chromium
#     are installed too;
#   - each client is installed the way its users install it: the Python one
#     with pip into a venv (python3-venv), the PHP one with composer, the
#     Node one with npm (nodejs, npm); a test whose tool is still
#     missing skips, unless GMQ_REQUIRE_<TOOL>=1 (CI sets them) makes it fail.
set -euo pipefail

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have redis-server || need+=(redis-server)
have beanstalkd || need+=(beanstalkd)
have php || need+=(php-cli php-mbstring)
have python3 || need+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
have composer || need+=(composer)
have node || need+=(nodejs)
have npm || need+=(npm)
have systemd-analyze || need+=(systemd) # checks docs/gmq.service
have nc || need+=(netcat-openbsd)       # the docs' protocol examples
have jq || need+=(jq)                   # and the command line's
/usr/bin/python3 -c 'import pymemcache' 2>/dev/null || need+=(python3-pymemcache)
have memccp || need+=(libmemcached-tools)
have chromium || need+=(chromium)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)  # server sets: a real ZooKeeper (serverset's tests)
/usr/bin/python3 -c 'import kazoo' 2>/dev/null || need+=(python3-kazoo) # and a client that is not ours reads them
have thrift || need+=(thrift-compiler)  # kestrelthrift: its generated code is checked, and a Python client generated
/usr/bin/python3 -c 'import thrift' 2>/dev/null || need+=(python3-thrift) # drives its port
[ -f /usr/share/php/Pheanstalk/autoload.php ] || need+=(php-pda-pheanstalk)
have php && php -r 'exit(class_exists("Memcached") ? 0 : 1);' 2>/dev/null || need+=(php-memcached)
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && have apt-get; then
  echo "make test: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  exit 0
fi
if ! have redis-server; then
  echo "make test: redis-server is missing; install it with: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "make test: some tests will skip; to run them all: sudo apt-get install -y ${need[*]}" >&2
