#!/usr/bin/env bash
# Builds the pactum wheel: the `pactum` command (the CLI binary) and the Python package
# with its native half, in one wheel that `pip install` puts on PATH and sys.path.
#   python/build-wheel.sh            # release build, wheel in target/wheels/
#   python/build-wheel.sh --dev      # the debug profile (CI: reuses the test build)
# Needs maturin (`pip install maturin`) and a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
[ "${1:-}" = "--dev" ] && profile=dev
dir=$([ "$profile" = dev ] && echo debug || echo release)
target_dir=${CARGO_TARGET_DIR:-target}
cargo build --locked --profile "$profile" --bin pactum
mkdir -p python/pactum.data/scripts
cp "$target_dir/$dir/pactum" python/pactum.data/scripts/pactum
maturin build --locked --profile "$profile" -m python/Cargo.toml --out "$target_dir/wheels" --compatibility linux
