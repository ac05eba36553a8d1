#!/usr/bin/env bash
# Installs the real peers the test suite talks to, from Debian's packages,
# plus staticcheck from the Go module proxy. Safe to run repeatedly.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

need=()
command -v mosquitto_pub >/dev/null 2>&1 || need+=(mosquitto-clients)
[ -x /usr/sbin/mosquitto ] || command -v mosquitto >/dev/null 2>&1 || need+=(mosquitto)

# The bridge's end-to-end test talks to a real Zabbix 6.0 server, its
# frontend API served by php -S, and a throwaway PostgreSQL cluster.
[ -x /usr/sbin/zabbix_server ] || need+=(zabbix-server-pgsql)
[ -d /usr/share/zabbix ] || need+=(zabbix-frontend-php)
command -v php >/dev/null 2>&1 || need+=(php-cli)
# grep reads all of php -m: with -q it would stop early, php would die of
# SIGPIPE and pipefail would report the module missing on every run.
php -m 2>/dev/null | grep -x pgsql >/dev/null || need+=(php-pgsql)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v zabbix_sender >/dev/null 2>&1 || need+=(zabbix-agent)

if [ ${#need[@]} -gt 0 ]; then
  echo "installing test peers: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The packaged broker would hold port 1883 and compete with the
  # appliance's embedded one; tests start their own on free ports.
  if command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now mosquitto >/dev/null 2>&1 || true
  fi
  $SUDO pkill -x mosquitto >/dev/null 2>&1 || true
  # Same for the packaged Zabbix server and agent: the e2e test starts its
  # own server on a free loopback port with a throwaway database.
  if command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now zabbix-server zabbix-agent postgresql >/dev/null 2>&1 || true
  fi
fi

GOBIN="$(go env GOPATH)/bin"
if [ ! -x "$GOBIN/staticcheck" ]; then
  echo "installing staticcheck"
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
