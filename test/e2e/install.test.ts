// scripts/install.sh and scripts/linkbox.service (SPEC §10): the script is run for real with --root <tmp>
// --no-systemctl and a stub binary, and what it leaves in that folder is checked: files and modes, the config
// (written once, never overwritten), the unit's hardening, CAP_NET_BIND_SERVICE only for a port below 1024,
// upgrade, --uninstall and --purge. systemctl, /healthz and the first account need systemd as PID 1 and are
// not exercised here.
import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../src/kernel/config'
import { REPO_ROOT, removeDir, tempDir } from '../support/server'

const SCRIPT = join(REPO_ROOT, 'scripts/install.sh')
const UNIT_SRC = join(REPO_ROOT, 'scripts/linkbox.service')
const EXAMPLE = join(REPO_ROOT, 'linkbox.example.toml')
const IS_ROOT = process.getuid?.() === 0

const work = tempDir('linkbox-install-')
afterAll(() => removeDir(work))

/** A stand-in for the linkbox binary: answers `version` with its tag, so two stubs differ byte for byte. */
function stub(tag: string): string {
  const path = join(work, `linkbox-${tag}`)
  writeFileSync(path, `#!/bin/sh\necho ${tag}\n`)
  chmodSync(path, 0o755)
  return path
}

function run(...args: string[]): { code: number; out: string } {
  const r = Bun.spawnSync(['bash', SCRIPT, ...args], { stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() }
}

function install(root: string, binary: string): string {
  const r = run('--root', root, '--no-systemctl', '--binary', binary)
  if (r.code !== 0) throw new Error(`install.sh exited ${r.code}:\n${r.out}`)
  return r.out
}

const mode = (path: string) => statSync(path).mode & 0o777
const paths = (root: string) => ({
  bin: join(root, 'usr/local/bin/linkbox'),
  conf: join(root, 'etc/linkbox/linkbox.toml'),
  unit: join(root, 'etc/systemd/system/linkbox.service'),
  data: join(root, 'var/lib/linkbox'),
})

/** Every key path of a TOML table, "section.key" (arrays are values). */
function keyPaths(doc: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(doc).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? keyPaths(v as Record<string, unknown>, `${prefix}${k}.`)
      : [`${prefix}${k}`],
  )
}

// The lines the brief and SPEC §10 ask of the unit, exactly as they must appear.
const HARDENING = [
  'Type=simple',
  'ExecStart=/usr/local/bin/linkbox serve --config /etc/linkbox/linkbox.toml',
  'User=linkbox',
  'Group=linkbox',
  'StateDirectory=linkbox',
  'StateDirectoryMode=0700',
  'NoNewPrivileges=yes',
  'ProtectSystem=strict',
  'ProtectHome=yes',
  'PrivateTmp=yes',
  'PrivateDevices=yes',
  'ProtectKernelTunables=yes',
  'ProtectKernelModules=yes',
  'ProtectKernelLogs=yes',
  'ProtectControlGroups=yes',
  'ProtectClock=yes',
  'ProtectHostname=yes',
  'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX',
  'RestrictNamespaces=yes',
  'RestrictRealtime=yes',
  'RestrictSUIDSGID=yes',
  'LockPersonality=yes',
  'SystemCallFilter=@system-service',
  'SystemCallErrorNumber=EPERM',
  'SystemCallArchitectures=native',
  'UMask=0077',
  'Restart=on-failure',
  'RestartSec=2',
  'RestartPreventExitStatus=2',
  'StartLimitIntervalSec=60',
  'StartLimitBurst=5',
  'TimeoutStopSec=30',
  'KillSignal=SIGTERM',
  "ExecReload=/bin/sh -c 'kill -HUP ${MAINPID}'",
  'Environment=NO_COLOR=1',
  'WantedBy=multi-user.target',
]
const unitLines = (path: string) => readFileSync(path, 'utf8').split('\n')

test('bash -n: the script parses', () => {
  const r = Bun.spawnSync(['bash', '-n', SCRIPT], { stdout: 'pipe', stderr: 'pipe' })
  expect(r.stderr.toString()).toBe('')
  expect(r.exitCode).toBe(0)
})

describe('install into --root, then upgrade, uninstall, purge', () => {
  const root = join(work, 'root')
  const p = paths(root)
  let firstOut = ''

  test('a first install: binary 0755, config 0640, data directory 0700, unit 0644; systemctl skipped and said', () => {
    firstOut = install(root, stub('v1'))
    expect(mode(p.bin)).toBe(0o755)
    expect(readFileSync(p.bin, 'utf8')).toBe('#!/bin/sh\necho v1\n')
    expect(mode(p.conf)).toBe(0o640)
    expect(statSync(p.data).isDirectory()).toBe(true)
    expect(mode(p.data)).toBe(0o700)
    expect(mode(p.unit)).toBe(0o644)
    expect(firstOut).toContain('--no-systemctl: skipped systemctl')
    // No /etc/passwd under the root (and, in CI, no root privileges): user and ownership are skipped, with a note.
    expect(firstOut).toMatch(/skipping the user linkbox and file ownership/)
  })

  test('the config is the example with data_dir = "/var/lib/linkbox": every key of the example, the same values', () => {
    const text = readFileSync(p.conf, 'utf8')
    expect(text).toContain('\ndata_dir = "/var/lib/linkbox"\n')
    const written = Bun.TOML.parse(text) as Record<string, unknown>
    const example = Bun.TOML.parse(readFileSync(EXAMPLE, 'utf8')) as Record<string, unknown>
    expect(keyPaths(written).sort()).toEqual(keyPaths(example).sort())
    expect({ ...written, data_dir: 'x' }).toEqual({ ...example, data_dir: 'x' })
    expect(written.data_dir).toBe('/var/lib/linkbox')
    // and linkbox itself accepts it (every key known, every value valid)
    expect(loadConfig(p.conf).data_dir).toBe('/var/lib/linkbox')
  })

  test('the unit has every hardening line, an empty CapabilityBoundingSet and no MemoryDenyWriteExecute', () => {
    const lines = unitLines(p.unit)
    for (const line of HARDENING) expect(lines).toContain(line)
    expect(lines).toContain('CapabilityBoundingSet=')
    expect(lines.filter((l) => l.startsWith('AmbientCapabilities') || l.startsWith('MemoryDenyWriteExecute'))).toEqual(
      [],
    )
    expect(readFileSync(p.unit, 'utf8')).toBe(readFileSync(UNIT_SRC, 'utf8'))
  })

  test('a re-run keeps an edited config byte for byte, keeps the data and replaces the binary', () => {
    const edited = readFileSync(p.conf, 'utf8').replace('port = 8080', 'port = 9090') + '# mine\n'
    writeFileSync(p.conf, edited)
    chmodSync(p.conf, 0o600)
    writeFileSync(join(p.data, 'linkbox.db'), 'not really a database')
    const out = install(root, stub('v2'))
    expect(out).toContain('kept the existing')
    expect(readFileSync(p.conf, 'utf8')).toBe(edited)
    expect(mode(p.conf)).toBe(0o600)
    expect(readFileSync(join(p.data, 'linkbox.db'), 'utf8')).toBe('not really a database')
    expect(readFileSync(p.bin, 'utf8')).toBe('#!/bin/sh\necho v2\n')
    expect(mode(p.bin)).toBe(0o755)
    expect(out).toContain('installing linkbox v2')
  })

  test('CAP_NET_BIND_SERVICE only while server.port or mail.smtp_port is below 1024', () => {
    const original = readFileSync(p.conf, 'utf8')
    const capLines = () => unitLines(p.unit).filter((l) => /^(CapabilityBoundingSet|AmbientCapabilities)=/.test(l))

    writeFileSync(p.conf, original.replace(/^port = \d+$/m, 'port = 80'))
    install(root, stub('v2'))
    expect(capLines()).toEqual([
      'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
      'AmbientCapabilities=CAP_NET_BIND_SERVICE',
    ])

    writeFileSync(p.conf, original.replace(/^smtp_port = \d+$/m, 'smtp_port = 25'))
    install(root, stub('v2'))
    expect(capLines()).toEqual([
      'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
      'AmbientCapabilities=CAP_NET_BIND_SERVICE',
    ])

    // A "port = 80" in another table, before [server], is not server.port.
    writeFileSync(p.conf, original.replace('\n[server]\n', "\n[extra]\nport = 80 # not the server's\n\n[server]\n"))
    install(root, stub('v2'))
    expect(capLines()).toEqual(['CapabilityBoundingSet='])

    writeFileSync(p.conf, original)
    install(root, stub('v2'))
    expect(capLines()).toEqual(['CapabilityBoundingSet='])
    expect(readFileSync(p.unit, 'utf8')).toBe(readFileSync(UNIT_SRC, 'utf8'))
  })

  test('--uninstall removes the binary and the unit and keeps the config and the data', () => {
    const conf = readFileSync(p.conf, 'utf8')
    const r = run('--root', root, '--no-systemctl', '--uninstall')
    expect(r.code).toBe(0)
    expect(existsSync(p.bin)).toBe(false)
    expect(existsSync(p.unit)).toBe(false)
    expect(readFileSync(p.conf, 'utf8')).toBe(conf)
    expect(readFileSync(join(p.data, 'linkbox.db'), 'utf8')).toBe('not really a database')
    expect(r.out).toContain('--purge removes them')
  })

  test('a re-install after --uninstall keeps that config; --uninstall --purge removes config and data', () => {
    const conf = readFileSync(p.conf, 'utf8')
    install(root, stub('v3'))
    expect(readFileSync(p.conf, 'utf8')).toBe(conf)
    const r = run('--root', root, '--no-systemctl', '--uninstall', '--purge')
    expect(r.code).toBe(0)
    for (const path of [p.bin, p.unit, p.conf, join(root, 'etc/linkbox'), p.data]) expect(existsSync(path)).toBe(false)
  })
})

test("--purge keeps a data_dir that is not linkbox's (not /var/lib/linkbox, no linkbox.db in it)", () => {
  const root = join(work, 'foreign')
  const p = paths(root)
  install(root, stub('v1'))
  writeFileSync(p.conf, readFileSync(p.conf, 'utf8').replace('data_dir = "/var/lib/linkbox"', 'data_dir = "/srv"'))
  mkdirSync(join(root, 'srv'), { recursive: true })
  writeFileSync(join(root, 'srv/other'), "someone else's")
  const r = run('--root', root, '--no-systemctl', '--uninstall', '--purge')
  expect(r.code).toBe(0)
  expect(readFileSync(join(root, 'srv/other'), 'utf8')).toBe("someone else's")
  expect(existsSync(p.conf)).toBe(false)
  expect(r.out).toContain('holds no linkbox.db')
})

test('bad arguments: one line naming the problem, exit 1', () => {
  for (const [args, message] of [
    [['--frobnicate'], 'unknown argument: --frobnicate'],
    [['--purge'], '--purge goes with --uninstall'],
    [['--root', join(work, 'bad'), '--binary', join(work, 'missing')], 'not an executable file'],
  ] as const) {
    const r = run(...args)
    expect(r.code).toBe(1)
    expect(r.out).toMatch(new RegExp(`^install\\.sh: .*${message.replace(/[-.]/g, '\\$&')}$`, 'm'))
    expect(r.out).not.toContain(' line ') // no bash trace
  }
})

test.skipIf(IS_ROOT)('without --root and without root privileges: refuses, saying so', () => {
  const r = run('--no-systemctl', '--binary', stub('v1'))
  expect(r.code).toBe(1)
  expect(r.out).toContain('install.sh: must run as root')
})

// As root, --root DIR with its own /etc/passwd gets the user (useradd --root DIR) and the ownership, by the
// ids in DIR's files; this machine's users are not touched. Unprivileged (CI), useradd cannot run: skipped.
test.skipIf(!IS_ROOT)(
  'as root, into a --root with its own /etc/passwd: the user linkbox, root:linkbox config, linkbox data',
  () => {
    const root = join(work, 'image')
    mkdirSync(join(root, 'etc'), { recursive: true })
    writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/bash\n')
    writeFileSync(join(root, 'etc/group'), 'root:x:0:\n')
    writeFileSync(join(root, 'etc/shadow'), 'root:*::0:99999:7:::\n', { mode: 0o640 })
    writeFileSync(join(root, 'etc/gshadow'), 'root:*::\n', { mode: 0o640 })
    const hostPasswd = readFileSync('/etc/passwd', 'utf8')
    const out = install(root, stub('v1'))
    expect(out).toContain('created the system user linkbox')
    const entry = readFileSync(join(root, 'etc/passwd'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('linkbox:'))!
    const [, , uid, gid, , home, shell] = entry.split(':')
    expect([home, shell]).toEqual(['/var/lib/linkbox', '/usr/sbin/nologin'])
    expect(Number(uid)).toBeLessThan(1000) // a system user
    const p = paths(root)
    expect([statSync(p.conf).uid, statSync(p.conf).gid]).toEqual([0, Number(gid)])
    expect([statSync(p.data).uid, statSync(p.data).gid]).toEqual([Number(uid), Number(gid)])
    expect(readFileSync('/etc/passwd', 'utf8')).toBe(hostPasswd)
    // A second run finds the user and does not add it again.
    expect(install(root, stub('v2'))).not.toContain('created the system user')
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8').match(/^linkbox:/gm)).toHaveLength(1)
  },
)

// systemd-analyze verify checks the unit's keys and values against this machine's systemd. ExecStart must
// name an executable that exists, so a copy points it at a stub; every other line is the installed unit's.
// It exits 0 on unknown keys and bad values too, only printing them: its output must be empty.
const ANALYZE = Bun.which('systemd-analyze')
describe.skipIf(!ANALYZE)(
  'systemd-analyze verify and security (skipped where systemd-analyze is not installed; CI installs it)',
  () => {
    for (const port of [8080, 80]) {
      test(`the installed unit with port = ${port} verifies with no complaint and rates OK or better`, () => {
        const root = join(work, `verify-${port}`)
        install(root, stub('v1'))
        const p = paths(root)
        writeFileSync(p.conf, readFileSync(p.conf, 'utf8').replace(/^port = \d+$/m, `port = ${port}`))
        install(root, stub('v1'))
        const dir = join(root, 'verify')
        mkdirSync(dir)
        const copy = join(dir, 'linkbox.service')
        writeFileSync(
          copy,
          readFileSync(p.unit, 'utf8').replace('ExecStart=/usr/local/bin/linkbox ', `ExecStart=${p.bin} `),
        )
        const r = Bun.spawnSync([ANALYZE!, 'verify', copy], { stdout: 'pipe', stderr: 'pipe' })
        expect(r.stdout.toString() + r.stderr.toString()).toBe('')
        expect(r.exitCode).toBe(0)

        // The bar: `systemd-analyze security linkbox` rates the unit "OK" or better. --offline reads
        // the unit file (systemd ≥ 250) instead of asking a running manager; the same rating.
        const sec = Bun.spawnSync([ANALYZE!, 'security', '--offline=true', '--no-pager', copy], {
          stdout: 'pipe',
          stderr: 'pipe',
        })
        const out = sec.stdout.toString() + sec.stderr.toString()
        const overall = out.match(/Overall exposure level for linkbox\.service: (\d+\.\d) (\w+)/)
        expect(overall, out).not.toBeNull()
        expect(['SAFE', 'OK']).toContain(overall![2]!)
        expect(Number(overall![1])).toBeLessThan(3)
      })
    }
  },
)
