/** The most times in any window of `windowMs` among these, the window sliding over every start: as Stripe counts "N a second". */
export function mostInAnyWindow(timesMs: readonly number[], windowMs = 1_000): number {
  const sorted = [...timesMs].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
