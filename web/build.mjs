// Bundles the example app (src/main.js and the Firebase JS SDK from node_modules) into dist/app.js,
// offline: the page loads nothing from a CDN.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/main.js'],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  outfile: 'dist/app.js',
  logLevel: 'warning',
});
