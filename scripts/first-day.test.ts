/**
 * docs/operations.md's first day under systemd, run as written: the two `sh` blocks of its "systemd"
 * section and, between them, the block of its "First day" section (another key, the metrics port),
 * line by line, as root in a throwaway mount, PID and network namespace (`unshare`):
 * `/etc`, `/usr` and `/var/lib` are overlays on a tmpfs, so `useradd`, `install` and the keys
 * file leave the host untouched, and port 8080 is the namespace's own. CI has no systemd, so
 * `systemctl` and `journalctl` are shell functions that start the installed unit's `ExecStart=`
 * as the unit says: `User=`/`Group=` through `setpriv` (no capabilities, no_new_privs),
 * `UMask=`, `Environment=`, `EnvironmentFile=`, `StateDirectory=` with its mode,
 * `WorkingDirectory=`, a read-only `/etc`, `/usr` and `/var` but `/var/lib/<StateDirectory>`
 * (`ProtectSystem=strict`, `ReadWritePaths=`), and a private `/tmp`.
 *
 * Between the blocks, the admin API started on the keys file in the read-only `/etc` must be
 * refused at start (exit 2, the file and the fix named), never answer 500 per change.
 *
 * Needs root, unshare, setpriv and useradd: `make first-day-test` (in CI).
 */
import { describe, expect, test } from 'bun:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dir, '..');
const READY =
  process.getuid?.() === 0 && ['unshare', 'setpriv', 'useradd', 'curl'].every((tool) => Bun.which(tool) !== null);
if (!READY)
  console.warn('first-day.test.ts: needs root, unshare, setpriv, useradd and curl; skipped (make first-day-test)');

/** The `sh` blocks of the operations guide's "### systemd" section, each as its commands (a `\` line joined to the next). */
function systemdBlocks(): string[][] {
  const readme = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const start = readme.indexOf('\n### systemd\n');
  const section = readme.slice(start, readme.indexOf('\n### ', start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    (m[1] ?? '')
      .trimEnd()
      .replace(/ *\\\n */g, ' ')
      .split('\n'),
  );
}

/** The `sh` block of the operations guide's "### First day" section, as its lines. */
function firstDayBlock(): string[] {
  const page = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const start = page.indexOf('\n### First day\n');
  const section = page.slice(start, page.indexOf('\n### ', start + 1));
  return (/```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '').trimEnd().split('\n');
}

/** The shell functions that play systemd for the unit installed at /etc/systemd/system/petstore.service. */
const SYSTEMD = String.raw`
UNIT=/etc/systemd/system/petstore.service
unit() { sed -n "s/^$1=//p" "$UNIT"; }
SERVICE_PID=
start_service() {
  local user group mask dir state mode exec envfile
  user=$(unit User); group=$(unit Group); mask=$(unit UMask); dir=$(unit WorkingDirectory)
  state=/var/lib/$(unit StateDirectory); mode=$(unit StateDirectoryMode); exec=$(unit ExecStart)
  install -d -m "$mode" -o "$user" -g "$group" "$state"
  local envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  while IFS= read -r e; do envs+=("$e"); done < <(unit Environment)
  envfile=$(unit EnvironmentFile); envfile=${'$'}{envfile#-}
  if [[ -f $envfile ]]; then while IFS= read -r e; do [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] && envs+=("$e"); done <"$envfile"; fi
  local from; from=$(wc -l <"$JOURNAL")
  unshare --mount --propagation private bash -c '
    set -e
    for ro in /etc /usr /var /var/lib; do mount --rbind "$ro" "$ro"; mount -o remount,bind,ro "$ro"; done
    mount --bind "$1" "$1"; mount -o remount,bind,rw "$1"
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    cd "$2"
    shift 2
    exec "$@"' _ "$state" "$dir" \
    env -i "${'$'}{envs[@]}" setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs \
      --inh-caps=-all --bounding-set=-all -- bash -c "umask $mask && exec $exec" >>"$JOURNAL" 2>&1 &
  SERVICE_PID=$!
  # Type=exec: started once it runs; wait for it to listen (or to exit) as a person would.
  for _ in $(seq 100); do
    tail -n +$((from + 1)) "$JOURNAL" | grep -q '"msg":"listening"' && return 0
    kill -0 "$SERVICE_PID" 2>/dev/null || break
    sleep 0.1
  done
  wait "$SERVICE_PID"; echo "petstore.service: exited with $?" >>"$JOURNAL"; SERVICE_PID=
}
stop_service() {
  if [[ -n $SERVICE_PID ]]; then kill -TERM "$SERVICE_PID"; wait "$SERVICE_PID" || true; SERVICE_PID=; fi
}
systemctl() {
  case "$*" in
    daemon-reload) ;;
    "enable --now petstore" | "start petstore") start_service ;;
    "stop petstore") stop_service ;;
    "restart petstore") stop_service; start_service ;;
    *) echo "systemctl $*: not played here" >&2; return 1 ;;
  esac
}
journalctl() {
  local n=10
  while (($#)); do [[ $1 == -n ]] && { n=$2; shift; }; shift; done
  tail -n "$n" "$JOURNAL"
}
`;

/** Each line of `lines` run as written, its output after a marker line naming it. */
function played(lines: string[]): string {
  const quoted = (line: string) => `'${line.replaceAll("'", "'\\''")}'`;
  return lines.map((line) => `printf '\\n>>> %s\\n' ${quoted(line)}\n${line}`).join('\n');
}

/** What each step printed, by its line as the guide writes it. */
function outputs(log: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of log.split('\n>>> ').slice(1)) {
    const nl = part.indexOf('\n');
    out.set(part.slice(0, nl), part.slice(nl + 1).trim());
  }
  return out;
}

describe.skipIf(!READY)(
  "the operations guide's first day under systemd, as written, under the unit's restrictions",
  () => {
    test('the keys file is the service user’s, the service serves, the admin API is refused on /etc and works from /var/lib', () => {
      const [install, admin] = systemdBlocks();
      const firstDay = firstDayBlock();
      expect([install?.length ?? 0, firstDay.length, admin?.length ?? 0].every((n) => n > 3)).toBe(true);
      const dir = mkdtempSync(join(tmpdir(), 'petstore-first-day-'));
      try {
        const script = [
          'set -uo pipefail',
          `T=${dir}`,
          'mount --make-rprivate /',
          'mount -t tmpfs tmpfs "$T"',
          'for d in /etc /usr /var/lib; do mkdir -p "$T/up$d" "$T/work$d"; mount -t overlay overlay -o "lowerdir=$d,upperdir=$T/up$d,workdir=$T/work$d" "$d"; done',
          'ip link set lo up',
          'JOURNAL=$T/journal.log; : >"$JOURNAL"',
          SYSTEMD,
          `cd ${JSON.stringify(ROOT)}`,
          played(install ?? []),
          played(firstDay),
          // Not the operations guide's: what the unit makes of the files, then the admin API on /etc.
          played([
            'stat -c "%U:%G %a" /etc/petstore/keys.json /etc/petstore/keys.json.audit.jsonl',
            'stat -c "%U:%G %a" /var/lib/petstore/petstore.db',
            'echo PETSTORE_ADMIN_PORT=8081 >> /etc/petstore/petstore.env',
            'systemctl restart petstore',
            'cat "$JOURNAL"',
            'sed -i /PETSTORE_ADMIN_PORT/d /etc/petstore/petstore.env',
          ]),
          played(admin ?? []),
          played([
            'curl -s -o /dev/null -w "%{http_code}\\n" -H "Authorization: Bearer $TOKEN" localhost:8080/v1/pets',
            'stat -c "%U:%G %a" /var/lib/petstore/keys.json',
            'systemctl stop petstore',
            'grep -c "\\"status\\":5" "$JOURNAL"',
          ]),
          'umount -l "$T" 2>/dev/null || true',
        ].join('\n');
        writeFileSync(join(dir, 'first-day.sh'), script);
        const run = spawnSync('unshare', ['--mount', '--net', '--pid', '--fork', 'bash', join(dir, 'first-day.sh')], {
          encoding: 'utf8',
          timeout: 120_000,
        });
        const out = outputs(run.stdout);
        const step = (line: string) => out.get(line) ?? `(no such step in:\n${run.stdout}\n${run.stderr})`;
        const find = (part: string) => [...out.keys()].find((line) => line.includes(part)) ?? part;

        // The README's first block.
        expect(JSON.parse(step(find('/readyz')))).toMatchObject({ status: 'ready' });
        expect(step(find('localhost:8080/v1/pets'))).toBe('[]');
        expect(step(find('journalctl'))).toContain('"msg":"listening"');
        // The "First day" block: the new key in force without a restart; the metrics port after one.
        const later = (part: string) => firstDay.find((line) => line.includes(part)) ?? part;
        expect(step(later('--consumer acme2'))).toMatch(/^psk_[0-9A-Za-z]{38}$/);
        expect(JSON.parse(step(later('sleep 2; journalctl')))).toMatchObject({
          msg: 'keys reloaded',
          trigger: 'file change',
          keysByPlan: { pro: 2 },
        });
        expect(step(later('systemctl restart'))).toBe('');
        expect(JSON.parse(step(firstDay.filter((line) => line.startsWith('journalctl'))[0] ?? ''))).toMatchObject({
          msg: 'listening',
          metrics: expect.stringContaining(':9090/metrics'),
        });
        expect(step(later('9090/metrics'))).toMatch(/^# TYPE petstore_\w+ (counter|gauge|histogram)$/);
        expect(step('stat -c "%U:%G %a" /etc/petstore/keys.json /etc/petstore/keys.json.audit.jsonl')).toBe(
          'petstore:petstore 600\npetstore:petstore 600',
        );
        // UMask=0077: what the service makes is its own alone.
        expect(step('stat -c "%U:%G %a" /var/lib/petstore/petstore.db')).toBe('petstore:petstore 600');

        // The admin API on a keys file in the read-only /etc: refused at start, with the file and the fix.
        const refused = step('cat "$JOURNAL"');
        expect(refused).toContain(
          'petstore: keys file: the admin API (--admin-port) changes /etc/petstore/keys.json, writing keys.json.lock, a temporary file and keys.json.audit.jsonl in /etc/petstore and renaming over the file, but this process cannot write /etc/petstore (EROFS).',
        );
        expect(refused).toContain('/var/lib/petstore/keys.json');
        expect(refused).toContain('petstore.service: exited with 2');

        // The README's second block: the admin API from the state directory changes a key.
        const created = JSON.parse(step(find('admin/v1/consumers/acme/keys'))) as Record<string, unknown>;
        expect(created).toMatchObject({ consumer: 'acme', token: expect.stringMatching(/^psk_[0-9A-Za-z]{38}$/) });
        expect(step(find('-w "%{http_code}'))).toBe('200');
        expect(step('stat -c "%U:%G %a" /var/lib/petstore/keys.json')).toBe('petstore:petstore 600');
        // No request of the whole run was answered 5xx.
        expect(step('grep -c "\\"status\\":5" "$JOURNAL"')).toBe('0');
        expect(run.status).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 150_000);
  },
);
