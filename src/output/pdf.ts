/**
 * A report's PDF: its HTML page printed by Chromium, headless, from a private folder, with the page's
 * own print stylesheet (A4). Chromium is a program the machine has, not a dependency of querygate: it
 * is found where the operator says (QUERYGATE_CHROMIUM) or where Debian, Ubuntu and Google install it,
 * and a report asked for as PDF on a machine without one is refused before it runs, saying how to get it.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../lib/errors.js';

/** Where Chromium is looked for when QUERYGATE_CHROMIUM names none: Debian's first, then on PATH. */
const KNOWN = ['/usr/bin/chromium', 'chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];
/** Longest a print may take before it is given up. */
const PRINT_TIMEOUT_MS = 60_000;

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** The Chromium to print with: the one configured (which must be there), else the first found. */
export function findChromium(configured: string | undefined, path = process.env.PATH ?? ''): string {
  if (configured !== undefined) {
    if (executable(configured)) return configured;
    throw new ConfigError(
      `--format pdf: QUERYGATE_CHROMIUM names ${configured}, which is not an executable; install Chromium there (apt-get install chromium) or name the one you have`,
    );
  }
  for (const name of KNOWN) {
    const found = name.startsWith('/') ? [name] : path.split(delimiter).map((dir) => join(dir, name));
    const hit = found.find(executable);
    if (hit) return hit;
  }
  throw new ConfigError(
    `--format pdf: no Chromium on this machine (looked for ${KNOWN.join(', ')}); install it (apt-get install chromium) or set QUERYGATE_CHROMIUM to its path, or leave pdf out`,
  );
}

/** Prints the page to PDF with Chromium; throws an Error with Chromium's last word when it cannot. */
export async function printPdf(chromium: string, html: string): Promise<Uint8Array> {
  const folder = mkdtempSync(join(tmpdir(), 'querygate-pdf-'));
  try {
    const page = join(folder, 'report.html');
    const pdf = join(folder, 'report.pdf');
    writeFileSync(page, html);
    const args = [
      '--headless',
      '--disable-gpu',
      // As root (a container, say) Chromium refuses to start without this.
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
      '--no-first-run',
      '--no-default-browser-check',
      `--user-data-dir=${join(folder, 'profile')}`,
      '--no-pdf-header-footer',
      `--print-to-pdf=${pdf}`,
      pathToFileURL(page).href,
    ];
    const stderr = await new Promise<string>((resolve, reject) => {
      const child = spawn(chromium, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let said = '';
      child.stderr.on('data', (chunk: Buffer) => (said = (said + chunk.toString('utf8')).slice(-4000)));
      const timer = setTimeout(() => child.kill('SIGKILL'), PRINT_TIMEOUT_MS);
      child.once('error', (err) => (clearTimeout(timer), reject(err)));
      child.once('exit', () => (clearTimeout(timer), resolve(said)));
    });
    try {
      return readFileSync(pdf);
    } catch {
      const last = stderr.trim().split('\n').at(-1) ?? 'no output';
      throw new Error(`Chromium (${chromium}) printed no PDF: ${last}`);
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
