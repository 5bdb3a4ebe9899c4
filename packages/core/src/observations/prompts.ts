import { escapeData } from '../agent/instructions.ts';
import type { Message } from '../storage/records.ts';
import { contentText } from './tokens.ts';

/**
 * The Observer's instructions. They describe the output only: nothing in them is a fact about the
 * user, and the Observer is told so, so that they are never recorded as the user's own facts or
 * priorities.
 */
export function observerInstructions(manageWorkingMemory: boolean): string {
  return [
    "You are the Observer of an assistant's memory. You read the newest messages of a conversation and write",
    "dense, dated observations that will replace those messages in the assistant's context.",
    '',
    'Rules:',
    '- Only record what the messages say. These instructions are not part of the conversation: never record',
    '  anything from them as a fact, preference or priority of the user.',
    '- Group lines under a heading "Date: YYYY-MM-DD" (the date of the message). Start each line with the',
    '  time of the message (HH:MM) and a priority mark: 🔴 important (facts, decisions, commitments,',
    '  preferences), 🟡 maybe important, 🟢 information.',
    '- Keep statements apart from questions: "User stated …" for what the user says is true, "User asked …"',
    '  for what the user wants to know; "Assistant …" for what the assistant said or did.',
    '- Resolve relative dates ("tomorrow", "last Friday") against the date of the message they appear in, and',
    '  write the absolute date next to them.',
    '- Keep names, numbers, ids and quantities exactly.',
    '',
    'Answer with:',
    '<observations>',
    'Date: 2026-12-01',
    '- 14:05 🔴 User stated they moved to Lisbon on 2026-11-28.',
    '</observations>',
    '<current-task>what the user is working on now, in one line</current-task>',
    '<suggested-response>how the assistant should continue, in one line</suggested-response>',
    ...(manageWorkingMemory
      ? [
          '<working-memory>the working-memory changes the messages call for: a JSON object of the fields to',
          'merge (JSON working memory) or the whole updated Markdown document (Markdown working memory); leave',
          'the tag out when nothing changes</working-memory>',
        ]
      : []),
  ].join('\n');
}

/** The Reflector's instructions. */
export const REFLECTOR_INSTRUCTIONS = [
  "You are the Reflector of an assistant's memory. You rewrite a long observation log into a shorter one",
  'that keeps everything the assistant may need: every 🔴 line, names, numbers, dates and decisions. Merge',
  'repeated lines, drop 🟢 lines that later lines make obsolete, keep the "Date:" headings, the times, the',
  'priority marks and any [thread …] labels. Never add facts. These instructions are not part of the log.',
  '',
  'Answer with the condensed log only, inside <observations> … </observations>.',
].join('\n');

/** A message as the Observer reads it: role, date and time, content (escaped). */
export function formatMessages(messages: readonly Message[], labelThreads: boolean): string {
  return messages
    .map((m) => {
      const thread = labelThreads ? ` thread="${escapeAttribute(m.threadId)}"` : '';
      const at = m.createdAt.toISOString().slice(0, 16).replace('T', ' ');
      return `<message role="${m.role}" at="${at}"${thread}>\n${escapeData(contentText(m.content))}\n</message>`;
    })
    .join('\n');
}

function escapeAttribute(text: string): string {
  return text.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** What the Observer answered. */
export interface ObserverOutput {
  observations: string;
  currentTask?: string;
  suggestedResponse?: string;
  workingMemory?: string;
}

/**
 * The content of the last `<tag>…</tag>` of `text` (a model may quote the tag earlier), trimmed;
 * `undefined` when absent. An unclosed last tag runs to the end of the text.
 */
export function tagContent(text: string, tag: string): string | undefined {
  const open = text.lastIndexOf(`<${tag}>`);
  if (open < 0) return undefined;
  const start = open + tag.length + 2;
  const close = text.indexOf(`</${tag}>`, start);
  return text.slice(start, close < 0 ? undefined : close).trim();
}

/**
 * Parses the Observer's answer. An answer without `<observations>` is taken whole as the
 * observations (models drop tags); an empty one is `null` (nothing to record).
 */
export function parseObserver(text: string): ObserverOutput | null {
  const observations = tagContent(text, 'observations') ?? stripTags(text);
  if (observations === '') return null;
  const out: ObserverOutput = { observations };
  const task = tagContent(text, 'current-task');
  const suggested = tagContent(text, 'suggested-response');
  const wm = tagContent(text, 'working-memory');
  if (task) out.currentTask = task;
  if (suggested) out.suggestedResponse = suggested;
  if (wm) out.workingMemory = wm;
  return out;
}

/** The Reflector's answer: the condensed log, or `null` when empty. */
export function parseReflector(text: string): string | null {
  const log = tagContent(text, 'observations') ?? stripTags(text);
  return log === '' ? null : log;
}

function stripTags(text: string): string {
  return text.replace(/<\/?(current-task|suggested-response|working-memory)>[\s\S]*/i, '').trim();
}
