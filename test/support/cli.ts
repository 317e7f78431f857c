/** Runs the built CLI (dist/), as an MCP client configuration would launch it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI = resolve('dist/src/cli.js');

export interface RunningCli {
  readonly child: ChildProcess;
  readonly stderr: () => string;
  /** Resolves with the first stderr line that matches. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code when the process exits by itself. */
  readonly exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

export function startCli(args: string[], env: Record<string, string>): RunningCli {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return {
    child,
    exited,
    stderr: () => stderr,
    waitForLog: (pattern, timeoutMs = 30_000) =>
      new Promise((found, fail) => {
        const started = Date.now();
        const poll = setInterval(() => {
          const match = pattern.exec(stderr);
          if (match) {
            clearInterval(poll);
            found(match);
          } else if (child.exitCode !== null || Date.now() - started > timeoutMs) {
            clearInterval(poll);
            fail(new Error(`no log line matching ${pattern}; stderr was:\n${stderr}`));
          }
        }, 25);
      }),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Runs the CLI to completion and gives its exit code and output. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('exit', (code) => done({ code, stdout, stderr }));
  });
}
