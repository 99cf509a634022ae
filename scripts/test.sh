#!/usr/bin/env bash
# The project's one test line (README.md, "The test line", and .ci/run): on a fresh Debian
# machine it installs what is missing, system packages included, then runs every
# suite: unit, integration (real HTTP emulator, real redis-server), the built server
# as a process, the explorer in a real headless Chromium, and the alert rules in promtool.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium)
# promtool checks and unit-tests deploy/prometheus/alerts.yaml (test/integration/dashboards.test.ts).
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing system packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "==> npm ci (brings Node 24 as a devDependency)"
# The packages need Node 22.19+ (package.json "engines"). An older system Node (CI's
# is 20) installs through npx with the project's own Node, the version of the `node`
# devDependency that every npm script runs afterwards, so npm has no engine to warn about.
if node -e "const [major, minor] = process.versions.node.split('.').map(Number); process.exit(major > 22 || (major === 22 && minor >= 19) ? 0 : 1)"; then
  npm ci --no-audit --no-fund
else
  npx --yes -p "node@$(node -p "require('./package.json').devDependencies.node")" -c 'npm ci --no-audit --no-fund'
fi

# The README's figure for the line is measured from here (npm ci done) to the last test,
# in wall time and in CPU time (user + system of every process the line waited for:
# the machine's cores bound the line, so the CPU it uses is what a change to it moves).
after_install=$SECONDS
cpu_times=$(mktemp)
trap 'rm -f "$cpu_times"' EXIT
read_cpu() { # sets cpu_total: user + system seconds of this shell's finished children
  # bash's `times`, run in this shell: in a subshell (a pipe, $(...)) it counts none.
  times >"$cpu_times"
  cpu_total=$(awk 'NR == 2 { total = 0; for (i = 1; i <= 2; i++) { split($i, part, "m"); total += part[1] * 60 + part[2] } printf "%d", total }' "$cpu_times")
}
read_cpu
cpu_after_install=$cpu_total

# From here on, the project's own Node (node_modules/.bin/node) runs npm and everything
# else, whatever the system's is.
export PATH="$PWD/node_modules/.bin:$PATH"

stages=$(mktemp -d)
# On exit, whatever still runs in the background (a check, the install below) stops too.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$stages" "${snapshot:-}" "$cpu_times"' EXIT

# Grafbase Gateway (test/e2e/grafbase.test.ts) ships its binary in a platform package of
# its own; only the Linux x64 one is on the registry at this version, so it is not a
# devDependency (npm ci would then fail on every other platform) but installed here, into
# a folder of its own: an install into node_modules relinks every package's command in
# node_modules/.bin, which the codegen, the build and the checks run meanwhile. So it
# runs beside them instead of before them (about 6 s).
GRAFBASE_CLI=@grafbase/cli-x86_64-unknown-linux-musl@0.80.4
GRAFBASE_DIR=node_modules/.cache/grafbase-cli
grafbase_install=
if [ ! -x node_modules/@grafbase/cli-x86_64-unknown-linux-musl/grafbase ] && [ ! -x "$GRAFBASE_DIR/node_modules/@grafbase/cli-x86_64-unknown-linux-musl/grafbase" ]; then
  echo "==> Grafbase Gateway binary ($GRAFBASE_CLI, into $GRAFBASE_DIR), beside what follows"
  mkdir -p "$GRAFBASE_DIR"
  nice -n 10 npm install --prefix "$GRAFBASE_DIR" --no-save --no-package-lock --no-audit --no-fund "$GRAFBASE_CLI" >"$stages/grafbase.log" 2>&1 &
  grafbase_install=$!
fi

echo "==> the typecheck and the lint, beside the codegen check, the build and then the tests ($((SECONDS - after_install)) s after npm ci)"
# The line is bound by the machine's cores, and neither check writes anything the build
# or the tests read, so they run beside them rather than before: their CPU fills what the
# build (mostly one core) and jest leave idle (its start, and the tail where one long
# suite runs alone). Each check's output is shown when it ends, under its name. A check
# that fails stops jest at once, so a type error or a lint finding still fails the line in
# the time the check takes, not after every suite. They start before the codegen check:
# graphql-codegen writes no file whose content it would not change (it compares hashes),
# so while the generated code is up to date the checks read it as committed, and when it
# is not, the codegen check below fails the line whatever the checks find.
declare -A check_of=()
# Niced: what gates jest (the codegen check, the build) and then jest itself come first,
# and the checks take the CPU they leave, as jest's suites wait on sockets and children.
for check in typecheck lint; do
  nice -n 10 npm run --silent "$check" >"$stages/$check.log" 2>&1 &
  check_of[$!]=$check
done

echo "==> generated code is up to date with schema.graphql and operations/, checked beside the build"
snapshot=$(mktemp -d)
for dir in src/__generated__ operations/__generated__; do
  [ -d "$dir" ] && mkdir -p "$snapshot/$dir" && cp -R "$dir/." "$snapshot/$dir/"
done
# The build reads src/__generated__ while the codegen runs: graphql-codegen writes no
# file whose content it would not change, so while the generated code is up to date
# the build reads it as committed, and when it is not, the line stops below whatever
# the build made of it. Side by side, jest starts about 3 s sooner (the codegen is
# mostly one core's work, the build mostly another's).
npm run --silent codegen >"$stages/codegen.log" 2>&1 &
codegen=$!

echo "==> build (the built server, dist/, is what the end-to-end suites start)"
npm run --silent build

if ! wait "$codegen"; then
  cat "$stages/codegen.log" >&2
  echo "npm run codegen failed" >&2
  exit 1
fi
for dir in src/__generated__ operations/__generated__; do
  if [ -d "$dir" ] && ! diff -r "$snapshot/$dir" "$dir" >/dev/null; then
    echo "generated code in $dir is stale: run 'npm run codegen' and commit the result" >&2
    diff -r "$snapshot/$dir" "$dir" | head -40 >&2
    exit 1
  fi
done

if [ -n "$grafbase_install" ]; then
  if ! wait "$grafbase_install"; then
    cat "$stages/grafbase.log" >&2
    echo "installing $GRAFBASE_CLI failed" >&2
    exit 1
  fi
fi

echo "==> tests ($((SECONDS - after_install)) s after npm ci)"
# jest in a process group of its own, so that stopping it stops its workers too. Before
# its workers start, its global setup compiles every TypeScript file the suites load into
# Jest's transform cache, in one process (test/helpers/warmTransforms.js says why).
JEST_WARM_TRANSFORM_CACHE=1 setsid npm test -- --ci &
jest=$!
failed=()
jest_status=
while [ -z "$jest_status" ] || [ ${#check_of[@]} -gt 0 ]; do
  status=0
  wait -n -p done "$jest" "${!check_of[@]}" || status=$?
  if [ "$done" = "$jest" ]; then
    jest_status=$status
    continue
  fi
  check=${check_of[$done]}
  unset "check_of[$done]"
  echo "--> npm run $check: $([ "$status" -eq 0 ] && echo passed || echo FAILED) ($((SECONDS - after_install)) s after npm ci)"
  cat "$stages/$check.log"
  if [ "$status" -ne 0 ]; then
    failed+=("$check")
    if [ -z "$jest_status" ]; then
      echo "stopping the tests: npm run $check failed" >&2
      kill -TERM -- "-$jest" 2>/dev/null || true
    fi
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
[ "$jest_status" -eq 0 ] || exit "$jest_status"
read_cpu
echo "==> the line took $((SECONDS - after_install)) s from npm ci done to the last test ($SECONDS s in all), and $((cpu_total - cpu_after_install)) CPU-seconds"
