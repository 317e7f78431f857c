/** The progress bar `querygate report` draws on a terminal while a report's queries run. */

export interface ProgressBar {
  update(done: number, total: number, message: string): void;
  clear(): void;
}

/** A progress bar on a terminal; none where the stream is not one (under cron, in a pipe, in a file). */
export function progressBar(
  stream: Pick<NodeJS.WriteStream, 'isTTY' | 'columns' | 'write'>,
  label: string,
): ProgressBar | undefined {
  if (!stream.isTTY) return undefined;
  let shown = false;
  return {
    update: (done, total, message) => {
      const room = (stream.columns || 80) - label.length - message.length - 5;
      const width = Math.max(10, Math.min(40, room));
      const filled = Math.round((Math.min(done, total) / Math.max(total, 1)) * width);
      stream.write(`\r\x1b[2K${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${message}`);
      shown = true;
    },
    clear: () => {
      if (shown) stream.write('\r\x1b[2K');
      shown = false;
    },
  };
}
