import type { BackgroundInput, ReadInput, RunInput, WriteInput } from './agentTools';

/**
 * A language-model tool's input as VS Code hands it over: the model's JSON, which package.json's
 * schema describes but nobody checks. Read leniently: a field of the wrong type, or a blank
 * string, counts as not given, and the tool's own rules (core/agentTools.ts) say what is missing.
 */
export type ToolInput = Record<string, unknown>;

/** A string that is not blank, else undefined. */
export const inputText = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
const inputNumber = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** `{ [key]: v }`, or nothing when `v` is undefined (the inputs' optional fields stay absent). */
function opt<K extends string, V>(key: K, v: V | undefined): { [k in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [k in K]?: V };
}

export function runInput(input: ToolInput): RunInput {
  return {
    command: inputText(input['command']) ?? '',
    ...opt('executor', inputText(input['executor'])),
    ...opt('cwd', inputText(input['cwd'])),
    ...opt('timeoutSeconds', inputNumber(input['timeoutSeconds'])),
  };
}

export function backgroundInput(input: ToolInput): BackgroundInput {
  return {
    command: inputText(input['command']) ?? '',
    ...opt('executor', inputText(input['executor'])),
    ...opt('cwd', inputText(input['cwd'])),
    ...opt('waitSeconds', inputNumber(input['waitSeconds'])),
  };
}

export function readInput(input: ToolInput): ReadInput {
  return { id: inputText(input['id']) ?? '', ...opt('waitSeconds', inputNumber(input['waitSeconds'])) };
}

/** The text is sent as given (spaces and an empty line are input too); only `newline: false` turns the newline off. */
export function writeInput(input: ToolInput): WriteInput {
  return {
    id: inputText(input['id']) ?? '',
    text: typeof input['text'] === 'string' ? input['text'] : '',
    ...(input['newline'] === false ? { newline: false } : {}),
  };
}

export function stopInput(input: ToolInput): { id: string } {
  return { id: inputText(input['id']) ?? '' };
}
