/** How a report writes its figures for a person, in Markdown and HTML alike. */

/** A change with its sign and unit ("+12.5 %", "-0.4 pp"), or a dash when there is none. */
export function signed(value: number | null, unit: string): string {
  return value === null ? '–' : `${value > 0 ? '+' : ''}${value}${unit}`;
}

const MONEY = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const PLAIN = new Intl.NumberFormat('en-US', { maximumFractionDigits: 20 });

/** An amount with its cents and thousands separators ("12,345.60"), or a dash. */
export function formatMoney(value: number | null): string {
  return value === null ? '–' : MONEY.format(value);
}

/** A count or a rate as it is, with thousands separators ("1,204", "4.5"), or a dash. */
export function formatNumber(value: number | null): string {
  return value === null ? '–' : PLAIN.format(value);
}
