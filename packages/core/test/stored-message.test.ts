import { describe, expect, it } from 'vitest';
import { copyMessage, type Message } from '../src/driver.ts';

describe('copyMessage', () => {
  const message: Message = {
    id: 'm1',
    threadId: 't1',
    resourceId: 'r1',
    role: 'user',
    content: { format: 2, parts: [{ type: 'text', text: 'hi' }], nested: { list: [1, -0, null, 'x'] } },
    type: 'v2',
    createdAt: new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678)),
  };

  it('copies every field of a message row, deep-equal to the input as JSON carries it (-0 as 0)', () => {
    const json = { ...message, content: JSON.parse(JSON.stringify(message.content)) };
    expect(copyMessage(message)).toEqual(json);
    // JSON text has no -0: every store returns 0, the in-memory one too.
    expect(
      Object.is((copyMessage(message).content as { nested: { list: number[] } }).nested.list[1], 0),
    ).toBe(true);
  });

  it('shares no object with the input, so later changes to either do not leak', () => {
    const copy = copyMessage(message);
    expect(copy.content).not.toBe(message.content);
    expect(copy.createdAt).not.toBe(message.createdAt);
    (copy.content as { parts: { text: string }[] }).parts[0]!.text = 'changed';
    copy.createdAt.setTime(0);
    expect((message.content as { parts: { text: string }[] }).parts[0]!.text).toBe('hi');
    expect(message.createdAt.getTime()).toBe(Date.UTC(2024, 0, 2, 3, 4, 5, 678));
  });

  it('keeps only the fields a message row holds', () => {
    const extra = { ...message, extra: 'not stored' } as Message;
    expect(Object.keys(copyMessage(extra)).sort()).toEqual(
      ['content', 'createdAt', 'id', 'resourceId', 'role', 'threadId', 'type'].sort(),
    );
  });
});
