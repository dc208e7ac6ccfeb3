#!/usr/bin/env bash
# Fetch the two real captures used by the trace tests and examples into data/.
#
# They come from the Debian package `pathspider` (GPL-2+). The files are never committed: data/
# is git-ignored and this script is the only way they enter the tree. Running it again when both
# files are present with the right checksums does nothing.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data_dir="${repo_root}/data"
pkg_path="usr/lib/python3/dist-packages/pathspider/tests/data"

# name and expected sha256 (from the data README)
files=(
  "real.pcap ed2946c38ad35e2cf6ecd970314c92d0893328d78de09f36d5b398019524e3cf"
  "icmp_ttl.pcap d29aefe854912f99d13273debcea07e68ac5d906d011a4d2b1db7bb1192f5693"
)

die() {
  echo "fetch-traces: error: $*" >&2
  exit 1
}

have_all() {
  local entry name sum
  for entry in "${files[@]}"; do
    read -r name sum <<<"${entry}"
    [[ -f "${data_dir}/${name}" ]] || return 1
    [[ "$(sha256sum "${data_dir}/${name}" | cut -d' ' -f1)" == "${sum}" ]] || return 1
  done
}

if have_all; then
  echo "fetch-traces: data/real.pcap and data/icmp_ttl.pcap are present and verified"
  exit 0
fi

for tool in apt-get dpkg-deb tar sha256sum; do
  command -v "${tool}" >/dev/null || die "\`${tool}\` is required (this script needs a Debian-based system)"
done

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

cd "${work}"
if ! apt-get download pathspider >/dev/null 2>"${work}/apt.log"; then
  echo "fetch-traces: \`apt-get download pathspider\` failed; refreshing the package lists" >&2
  if [[ "$(id -u)" == 0 ]]; then
    apt-get update >/dev/null || die "\`apt-get update\` failed"
  else
    sudo apt-get update >/dev/null || die "\`sudo apt-get update\` failed"
  fi
  apt-get download pathspider >/dev/null 2>"${work}/apt.log" \
    || die "\`apt-get download pathspider\` failed: $(cat "${work}/apt.log")"
fi

debs=(pathspider_*.deb)
[[ -f "${debs[0]}" ]] || die "apt-get reported success but no pathspider_*.deb was downloaded"
mkdir extract
dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -C extract \
  || die "could not extract ${debs[0]}"

mkdir -p "${data_dir}"
for entry in "${files[@]}"; do
  read -r name sum <<<"${entry}"
  src="extract/${pkg_path}/${name}"
  [[ -f "${src}" ]] || die "${debs[0]} does not contain ${pkg_path}/${name}"
  got="$(sha256sum "${src}" | cut -d' ' -f1)"
  [[ "${got}" == "${sum}" ]] \
    || die "checksum mismatch for ${name}: expected ${sum}, got ${got} (from ${debs[0]})"
  cp "${src}" "${data_dir}/${name}.tmp"
  mv "${data_dir}/${name}.tmp" "${data_dir}/${name}"
  echo "fetch-traces: data/${name} ok (sha256 ${sum})"
done
