#!/usr/bin/env bash
# Installs (Debian packages, as root) and starts what the test suite needs. Idempotent.
# Outside CI a missing service is reported and the tests that need it skip with a message;
# under CI=true they fail loudly instead.
set -uo pipefail

declare -A PACKAGE_OF=(
  [redis-server]=redis-server
  [redis-cli]=redis-tools
)
# Managed Redis shapes: tests start their own primary, replica and sentinels, and their own
# Redis Cluster (made with redis-cli), on free loopback ports.
PACKAGE_OF+=(
  [redis-sentinel]=redis-sentinel
)
# Emulated regions (regions/): namespaces and tc, the NFQUEUE delay helper (compiled with gcc at
# setup, for kernels without netem), real-time priority (chrt), curl as a second opinion.
PACKAGE_OF+=(
  [ip]=iproute2
  [tc]=iproute2
  [iptables-legacy]=iptables
  [ip6tables-legacy]=iptables
  [gcc]=gcc
  [chrt]=util-linux
  [setpriv]=util-linux
  [curl]=curl
)
# Metrics: Prometheus with promtool, and the Pushgateway; tests start their own on free ports.
PACKAGE_OF+=(
  [prometheus]=prometheus
  [promtool]=prometheus
  [prometheus-pushgateway]=prometheus-pushgateway
)

# Deployment: amtool checks the Alertmanager configuration of deploy/compose.yaml, and
# the image's command lines are run through tini, the image's PID 1.
PACKAGE_OF+=(
  [amtool]=prometheus-alertmanager
  [tini]=tini
)

# Real servers whose behaviour the probes report on (gzip levels, Alt-Svc, connections per
# request, the delayed-ACK stall): tests start their own nginx on free loopback ports, and
# Debian's python3 http.server.
PACKAGE_OF+=(
  [nginx]=nginx
)
# A real Go client (Debian's Go 1.19) for the drain probe's go-before-1.27 policy: the test builds
# test/peers/go-drain-client with it (standard library only, no network).
PACKAGE_OF+=(
  [go]=golang-go
)
# Egress proxies: tests start their own tinyproxy on a free loopback port (CONNECT tunnels).
PACKAGE_OF+=(
  [tinyproxy]=tinyproxy
)
# The dns probe against a real resolver: tests start their own dnsmasq on a free loopback port
# (forwarding to the lab's DNS server), dig as a second opinion, stress-ng to load the machine.
PACKAGE_OF+=(
  [dnsmasq]=dnsmasq
  [dig]=dnsutils
  [stress-ng]=stress-ng
)
# A worker cut off from Redis: a socat relay of the test's own in front of Redis, its port dropped
# with iptables.
PACKAGE_OF+=(
  [socat]=socat
)

# Reports: the HTML report is opened in headless Chromium (driven by playwright-core), with a
# font so that its screenshots show text.
PACKAGE_OF+=(
  [chromium]=chromium
)

missing=()
for cmd in "${!PACKAGE_OF[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${PACKAGE_OF[$cmd]}")
done
[[ -e /usr/include/libnetfilter_queue/libnetfilter_queue.h ]] || missing+=(libnetfilter-queue-dev)
[[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]] || missing+=(fonts-dejavu-core)
[[ -x /usr/bin/python3 ]] || missing+=(python3)
# Clock skew: a worker run under libfaketime, its clock minutes off the fleet's.
[[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ]] || missing+=(libfaketime)
if ((${#missing[@]} > 0)); then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-services: installing ${missing[*]}"
    # Packages must not start their services (nginx would take port 80): the tests start their own.
    # Docker images have such a policy already; elsewhere one is in place for the install only.
    own_policy=
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=1
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    [[ -n $own_policy ]] && rm -f /usr/sbin/policy-rc.d
  else
    echo "ensure-services: missing ${missing[*]}; install with: sudo apt-get install ${missing[*]}"
  fi
fi

# Redis at REDIS_URL (default redis://127.0.0.1:6379): start one when nothing answers.
url=${REDIS_URL:-redis://127.0.0.1:6379}
hostport=${url#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
host=${hostport%:*}; port=${hostport##*:}
if command -v redis-cli >/dev/null 2>&1 && ! redis-cli -h "$host" -p "$port" ping >/dev/null 2>&1; then
  if [[ $host == 127.0.0.1 || $host == localhost ]] && command -v redis-server >/dev/null 2>&1; then
    echo "ensure-services: starting redis-server on $host:$port"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
      --dir /tmp --logfile "/tmp/probefleet-redis-$port.log"
    for _ in $(seq 50); do redis-cli -h "$host" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  else
    echo "ensure-services: nothing answers at $url"
  fi
fi
exit 0
