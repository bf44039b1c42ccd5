#!/usr/bin/env bash
# Install Debian's headless-capable Chromium and its WebDriver (packages chromium and chromium-driver,
# no recommends), which tests/test_browser.py drives to open the built HTML report. Idempotent: exits 0
# at once when both are already there. Without them the browser test is skipped and says why.
set -euo pipefail

have_all() {
    command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1
}

if have_all; then
    echo "install-chromium: already installed ($(chromium --version 2>/dev/null | head -n 1))"
    exit 0
fi
echo "install-chromium: installing chromium chromium-driver"

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(chromium chromium-driver)
# Refresh the package lists only when apt does not know the packages yet (a fresh container).
if ! apt-cache show "${packages[@]}" >/dev/null 2>&1; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 update
fi
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${packages[@]}"
have_all || { echo "install-chromium: chromium or chromedriver is still missing" >&2; exit 1; }
echo "install-chromium: installed ($(chromium --version 2>/dev/null | head -n 1))"
