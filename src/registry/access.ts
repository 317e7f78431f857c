/** Who may see and call which tool: a caller's toolset and its data scope. */
import type { Caller } from '../lib/caller.js';
import { appliesScope, scopeOf } from '../lib/data-scope.js';
import type { Registry } from './interface.js';
import type { ServedJobs } from './jobs.js';
import type { ServedReports } from './reports.js';
import type { ServedTemplates } from './templates.js';
import type { AnyTemplate } from './types.js';
import type { ReportEntry } from './entries.js';

export interface Access {
  allowed(caller: Caller, name: string): boolean;
  mayRunAsJob(caller: Caller, name: string): boolean;
}

export function accessTo(templates: ServedTemplates, reports: ServedReports, jobs: ServedJobs): Access {
  /**
   * What a caller may see and call. Its toolset allows the tools it names, and the job tools of the
   * reports it names (or of the submit tools it names); get_report_job and cancel_report_job come with
   * any of those. Its data scope allows the templates that apply every dimension it is scoped on, and
   * the reports (and their jobs) whose templates all do.
   */
  const allowed = (caller: Caller, name: string): boolean => {
    const scope = scopeOf(caller);
    const scoped = (used: readonly AnyTemplate[]): boolean => used.every((t) => appliesScope(t.dataScope, scope));
    const named = !caller.tools || caller.tools.has(name);
    const entry = templates.byName.get(name);
    if (entry) return named && scoped([entry.template]);
    const report = reports.byName.get(name);
    if (report) return named && scoped(report.report.uses);
    const grants = (e: ReportEntry): boolean =>
      scoped(e.report.uses) &&
      (!caller.tools || caller.tools.has(e.report.name) || caller.tools.has(e.report.job!.submitTool));
    const submitted = jobs.submitTools.get(name);
    if (submitted) return grants(submitted);
    return jobs.isJobTool(name) && jobs.entries.some((e) => (named ? scoped(e.report.uses) : grants(e)));
  };

  const mayRunAsJob = (caller: Caller, name: string): boolean => {
    const report = reports.byName.get(name);
    return (
      report !== undefined &&
      jobs.entries.includes(report) &&
      (allowed(caller, name) || allowed(caller, report.report.job!.submitTool))
    );
  };
  return { allowed, mayRunAsJob };
}

/**
 * What each data-scope dimension hides: for each dimension the served packs declare, the tools a
 * caller scoped on it does not see (the templates that do not apply it, and every report and job tool
 * that runs one of them), read from the registry's own toolsFor. Empty lists for a dimension that hides nothing.
 */
export function hiddenByDataScope(registry: Registry): Map<string, string[]> {
  const hidden = new Map<string, string[]>();
  for (const dimension of [...registry.dataScopeDimensions].sort()) {
    const seen = new Set(
      registry
        .toolsFor({ id: 'data-scope-check', dataScope: { [dimension]: ['\u0000scope-check'] } })
        .map((t) => t.name),
    );
    hidden.set(
      dimension,
      registry.tools.filter((t) => !seen.has(t.name)).map((t) => t.name),
    );
  }
  return hidden;
}
