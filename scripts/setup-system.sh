#!/usr/bin/env bash
# Install the Debian packages dtrlab needs, only those missing (needs root or
# sudo; skipped with a note where neither is available). Called by `make`.
set -euo pipefail

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
have_cmd cc || need+=(build-essential)
have_cmd git || need+=(git)
# Rust: prefer the machine's rustup toolchain; Debian's cargo is the fallback.
have_cmd cargo || need+=(cargo rustc)
# The paper: LaTeX via latexmk (Times fonts, booktabs, natbib from the
# recommended collections), poppler's pdftotext/pdftoppm for its checks.
TEX_PACKAGES=(latexmk texlive-latex-base texlive-latex-recommended texlive-fonts-recommended)
have_cmd latexmk && have_cmd pdflatex && kpsewhich mathptmx.sty >/dev/null 2>&1 || need+=("${TEX_PACKAGES[@]}")
have_cmd pdftotext || need+=(poppler-utils)
# The atlas page's browser test: headless Chromium and its WebDriver.
have_cmd chromium || need+=(chromium)
have_cmd chromedriver || need+=(chromium-driver)
for p in ${DTRLAB_EXTRA_PACKAGES:-}; do have_pkg "$p" || need+=("$p"); done

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if ! have_cmd apt-get; then
  echo "setup-system: please install: ${need[*]} (no apt-get here)" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if have_cmd sudo; then SUDO="sudo"; else
    echo "setup-system: need root to install: ${need[*]}" >&2; exit 1
  fi
fi
echo "setup-system: installing ${need[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
