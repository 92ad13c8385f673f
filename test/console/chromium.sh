#!/bin/sh
# Debian's chromium for the console's browser tests (CHROMIUM_BINARY: browser.ts chooses it), with every
# --disable-features switch merged into one:
# Chromium keeps only the last, and playwright-core passes a list of its own before the tests' (browser.ts).
features=
for arg do
  shift
  case $arg in
    --disable-features=*) features="${features:+$features,}${arg#--disable-features=}" ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec "${CHROMIUM_BINARY:-/usr/bin/chromium}" ${features:+"--disable-features=$features"} "$@"
