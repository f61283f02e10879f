import type { TextMatch } from './executorSearch';

/** A match's line as Find in Files previews it: the text and the match ranges in it (columns, end exclusive). */
export interface MatchPreview {
  text: string;
  ranges: Array<{ start: number; end: number }>;
}

/**
 * A line's preview no longer than `max` characters, from 40 characters before its first match
 * (or as far back as keeps `max` characters); the ranges move with it and are clipped to it.
 */
export function matchPreview(m: Pick<TextMatch, 'text' | 'ranges'>, max: number): MatchPreview {
  if (m.text.length <= max) return { text: m.text, ranges: m.ranges };
  const from = Math.max(0, Math.min(m.ranges[0]!.start - 40, m.text.length - max));
  const text = m.text.slice(from, from + max);
  return {
    text,
    ranges: m.ranges
      .map((r) => ({ start: Math.max(0, r.start - from), end: Math.min(text.length, r.end - from) }))
      .filter((r) => r.end >= r.start && r.start < text.length),
  };
}
