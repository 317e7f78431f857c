/** Reading a `querygate doctor` report in tests: its check lines and the fix under each. */
import { expect } from 'vitest';

export interface ReportedCheck {
  readonly status: 'PASS' | 'FAIL' | 'WARN';
  readonly name: string;
  readonly detail: string;
  fix?: string;
}

/** The check lines of a doctor report: `PASS  name  (detail)`, each failure or warning followed by `fix: ...`. */
export function parseChecks(report: string): ReportedCheck[] {
  const checks: ReportedCheck[] = [];
  for (const line of report.split('\n')) {
    const check = /^\s*(PASS|FAIL|WARN)\s+(.*)$/.exec(line);
    if (check) {
      // The name is separated from its detail by two or more spaces; names use single spaces.
      const [name, ...detail] = check[2]!.split(/\s{2,}/);
      checks.push({ status: check[1] as ReportedCheck['status'], name: name!, detail: detail.join(' ') });
      continue;
    }
    const fix = /^\s*fix:\s*(.*)$/.exec(line);
    if (fix && checks.length > 0) checks[checks.length - 1]!.fix = fix[1];
  }
  return checks;
}

/** The one check whose name matches (a string: the whole name). */
export function checkNamed(checks: readonly ReportedCheck[], pattern: RegExp | string): ReportedCheck {
  const found = checks.filter((c) => (typeof pattern === 'string' ? c.name === pattern : pattern.test(c.name)));
  expect(found, `checks named ${String(pattern)} in ${JSON.stringify(checks.map((c) => c.name))}`).toHaveLength(1);
  return found[0]!;
}
