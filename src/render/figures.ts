/** How a report writes its figures for a person, in Markdown and HTML alike. */

/** A change with its sign and unit ("+12.5 %", "-0.4 pp"), or a dash when there is none. */
export function signed(value: number | null, unit: string): string {
  return value === null ? '–' : `${value > 0 ? '+' : ''}${value}${unit}`;
}
