// The Node that wallet-ops needs (package.json's engines, `>=MAJOR.MINOR`), checked before anything opens a
// database: better-sqlite3's addon needs Node-API 10, and an older Node (these machines' system Node 20)
// does not fail to load it but crashes (a segmentation fault) at the first database it opens.
import { readFileSync } from 'node:fs';

/** Why this Node cannot run wallet-ops, or undefined when it can. */
export function unsupportedNode() {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const wanted = /^>=\s*(\d+)(?:\.(\d+))?/.exec(pkg.engines?.node ?? '');
  if (!wanted) return undefined;
  const [major, minor] = process.versions.node.split('.').map(Number);
  const [needMajor, needMinor] = [Number(wanted[1]), Number(wanted[2] ?? 0)];
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return (
    `wallet-ops needs Node ${pkg.engines.node} (package.json engines), not ${process.version} (${process.execPath}). ` +
    'In a checkout, run it through npm (npx wallet-ops, npm start, npm test): npm puts node_modules/.bin first on PATH, ' +
    'where the `node` devDependency installed Node 24. Or install Node 24.'
  );
}
