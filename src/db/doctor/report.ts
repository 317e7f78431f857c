import type { SafetyCheck } from './check.js';
import { JOB_ROLE_CHECK } from './job-role-safety.js';
import { planFails, type PlanCost } from './plans.js';
import { READER_CONNECTION_CHECK } from './reader-connection.js';

/** A readable report: one line per check, with the fix under each failure. */
export function formatReport(target: string, checks: readonly SafetyCheck[], plans: readonly PlanCost[]): string {
  const lines = [`querygate doctor: ${target}`, ''];
  const width = Math.max(...checks.map((c) => c.name.length));
  for (const check of checks) {
    const status = !check.ok ? 'FAIL' : check.warning ? 'WARN' : 'PASS';
    lines.push(`  ${status}  ${check.name.padEnd(width)}${check.detail ? `  (${check.detail})` : ''}`.trimEnd());
    if (status !== 'PASS' && check.fix) lines.push(`        fix: ${check.fix}`);
  }
  if (plans.length) {
    lines.push('', '  query plans over the widest allowed range (90 days):');
    for (const plan of plans) {
      lines.push(
        plan.totalCost === undefined
          ? `  FAIL  ${plan.tool.padEnd(width)}  EXPLAIN failed: ${plan.error}`
          : plan.totalCost > plan.maxCost
            ? `  FAIL  ${plan.tool.padEnd(width)}  cost ${plan.totalCost.toFixed(2)}, above the pack's ceiling ${plan.maxCost} (arguments ${JSON.stringify(plan.args)}); add an index or a rollup, or narrow the template`
            : `  PLAN  ${plan.tool.padEnd(width)}  cost ${plan.totalCost.toFixed(2)} (ceiling ${plan.maxCost})`,
      );
    }
  }
  const failed = checks.filter((c) => !c.ok).length + plans.filter(planFails).length;
  const roles = checks.some((c) => c.name.startsWith(JOB_ROLE_CHECK))
    ? 'reader role and the job role are'
    : 'reader role is';
  const warned = checks.filter((c) => c.ok && c.warning).length;
  const connection = checks.find((c) => c.name === READER_CONNECTION_CHECK && !c.ok);
  lines.push(
    '',
    connection
      ? `CONNECTION FAILED: the server's reader connection did not open (${connection.detail}); fix the connection and run doctor again.`
      : failed === 0
        ? `The ${roles} safe${warned ? `, with ${warned} warning(s)` : ''}.`
        : `UNSAFE: ${failed} check(s) failed. Apply the fixes as an admin.`,
  );
  return lines.join('\n');
}
