#!/usr/bin/env bash
# Writes the secrets compose.yaml mounts, each once (an existing file is
# kept): random passwords for MariaDB and Grafana's admin, quan's store URL
# with that password, and quan's token signing secret.
set -euo pipefail
cd "$(dirname "$0")"
umask 022
chmod 700 .
random() { tr -dc 'A-Za-z0-9' </dev/urandom | head -c "$1" || true; }
write() { # name value
	if [[ -e $1 ]]; then echo "keep  deploy/secrets/$1"; return; fi
	printf '%s' "$2" >"$1"
	chmod 644 "$1"
	echo "wrote deploy/secrets/$1"
}
write mariadb-password "$(random 32)"
write store-url "mysql://quan:$(cat mariadb-password)@mariadb:3306/quan"
write jwt-secret "$(random 48)"
write grafana-admin-password "$(random 24)"
