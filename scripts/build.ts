#!/usr/bin/env bun
// Builds the single executable dist/linkbox: src/main.ts with everything it imports (assets as text,
// migrations as code) compiled into one file. The binary ignores any bunfig.toml / .env / tsconfig.json /
// package.json in the directory it runs from, so its behaviour depends only on its config file. A yt-dlp is
// put into vendor/ first (scripts/bundle-ytdlp.ts) and embedded too; the binary extracts it into data_dir/bin.
//
//   bun run build            → dist/linkbox for this machine
//   bun scripts/build.ts --target bun-linux-arm64 --outfile dist/linkbox-arm64
import { mkdirSync, rmSync, statSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { VENDOR_FILE, VENDOR_META, bundleYtdlp } from './bundle-ytdlp'

// Paths relative to the repository, whatever the cwd the script is started from.
const root = resolve(import.meta.dir, '..')

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    outfile: { type: 'string' },
    target: { type: 'string' },
    sourcemap: { type: 'boolean', default: false },
  },
})

// The default is the repository's dist/linkbox; a path given on the command line is relative to the cwd.
const outfile = values.outfile ? resolve(values.outfile) : resolve(root, 'dist/linkbox')
mkdirSync(dirname(outfile), { recursive: true })
rmSync(outfile, { force: true })

// Without one the build goes on (bundleYtdlp has said so loudly): a missing yt-dlp costs media download only.
const ytdlp = await bundleYtdlp()

const started = performance.now()
const result = await Bun.build({
  // The QR and click-writer workers are loaded by URL at run time, so each is an entrypoint of its own
  // (bun bundles each into the executable). Entry names without their directory put them at
  // /$bunfs/root/render-worker.js and click-write-worker.js, next to the main module, where src/qr/renderer.ts
  // and src/app/app.ts look for them.
  entrypoints: [
    resolve(root, 'src/main.ts'),
    resolve(root, 'src/qr/render-worker.ts'),
    resolve(root, 'src/app/click-write-worker.ts'),
    resolve(root, 'src/links/og-image-worker.ts'),
  ],
  // Modules that main.ts imports only when a command needs them (the HTTP app for serve) go into chunks of
  // their own, which are not even parsed otherwise: `linkbox version` starts in ~20 ms instead of ~55.
  // The chunks sit beside the entries too: renderer.ts and app.ts, now in a chunk, find their workers
  // relative to themselves.
  splitting: true,
  naming: { entry: '[name].[ext]', chunk: '[name]-[hash].[ext]' },
  root,
  compile: {
    outfile,
    ...(values.target ? { target: values.target as Bun.Build.CompileTarget } : {}),
    autoloadBunfig: false,
    autoloadDotenv: false,
    autoloadTsconfig: false,
    autoloadPackageJson: false,
    // Bun.embeddedFiles lists them as yt-dlp and yt-dlp.json, which is how src/media/ytdlp.ts finds them (nothing
    // imports them, so a checkout without vendor/ still runs and type-checks).
    ...(ytdlp ? { assets: [VENDOR_FILE, VENDOR_META] } : {}),
  },
  minify: true,
  // Bytecode compiled at build time: `serve` answers its first request in ~65 ms instead of ~150 (the
  // modules are not parsed at start; measured with the bench's startup section). It needs ESM output for
  // the split chunks; import.meta.url stays file:///$bunfs/root/<chunk> (checked on Bun 1.4.4), so the
  // workers are still found beside their chunk. Only for this machine's own target: a cross-build
  // (--target) cannot be run here to check it, so it keeps the source form.
  bytecode: !values.target,
  format: 'esm',
  sourcemap: values.sourcemap ? 'linked' : 'none',
  throw: false,
})

if (!result.success) {
  console.error('build failed:')
  for (const log of result.logs) console.error(log)
  process.exit(1)
}
for (const log of result.logs) console.warn(log)

const size = statSync(outfile).size
const ms = Math.round(performance.now() - started)
console.log(
  `built ${relative(process.cwd(), outfile) || outfile}: ${(size / 1024 / 1024).toFixed(1)} MiB (${size} bytes) in ${ms} ms`,
)
console.log(ytdlp ? `  with yt-dlp ${ytdlp.version} (${ytdlp.source})` : '  WITHOUT a bundled yt-dlp')
