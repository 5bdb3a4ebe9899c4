/**
 * A minimal RESP2 codec: encodes commands as arrays of bulk strings and parses replies while
 * keeping apart what the Upstash REST protocol must tell apart (status vs bulk strings).
 */

/** A simple-string reply (`+OK`, `+QUEUED`). */
export interface StatusReply {
  kind: 'status';
  value: string;
}

/** An error reply (`-ERR …`). */
export interface ErrorReply {
  kind: 'error';
  message: string;
}

/** One parsed reply: status, error, integer, bulk bytes, nil or an array of replies. */
export type Reply = StatusReply | ErrorReply | number | Buffer | null | Reply[];

const CRLF = Buffer.from('\r\n');

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly (string | Buffer)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = typeof arg === 'string' ? Buffer.from(arg, 'utf8') : arg;
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, CRLF);
  }
  return Buffer.concat(parts);
}

/** Thrown inside the parser when the buffer ends before the reply does. */
const INCOMPLETE = Symbol('incomplete');

/**
 * Incremental reply parser: feed it socket chunks, take out complete replies in order.
 * Chunks are kept in a list and joined only when a reply may be complete.
 */
export class ReplyParser {
  private buffer: Buffer = Buffer.alloc(0);
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  /** Bytes needed before another parse attempt can succeed (0 when unknown). */
  private needed = 0;

  /** Adds bytes read from the socket. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.chunkBytes += chunk.length;
  }

  /** Returns every complete reply buffered so far. */
  drain(): Reply[] {
    if (this.buffer.length + this.chunkBytes < this.needed) return [];
    if (this.chunks.length > 0) {
      this.buffer = Buffer.concat([this.buffer, ...this.chunks]);
      this.chunks = [];
      this.chunkBytes = 0;
    }
    const replies: Reply[] = [];
    let offset = 0;
    for (;;) {
      if (offset >= this.buffer.length) break;
      try {
        const [reply, next] = parseReply(this.buffer, offset);
        replies.push(reply);
        offset = next;
        this.needed = 0;
      } catch (error) {
        if (error !== INCOMPLETE) throw error;
        this.needed = neededBytes(this.buffer, offset) + offset;
        break;
      }
    }
    this.buffer = this.buffer.subarray(offset);
    this.needed = Math.max(0, this.needed - offset);
    return replies;
  }
}

/** A lower bound of the bytes a top-level bulk reply at `offset` needs; 0 for anything else. */
function neededBytes(buffer: Buffer, offset: number): number {
  if (buffer[offset] !== 0x24) return 0;
  const end = buffer.indexOf(CRLF, offset);
  if (end < 0) return 0;
  const length = Number(buffer.toString('latin1', offset + 1, end));
  return end - offset + 2 + Math.max(0, length) + 2;
}

function readLine(buffer: Buffer, offset: number): [string, number] {
  const end = buffer.indexOf(CRLF, offset);
  if (end < 0) throw INCOMPLETE;
  return [buffer.toString('utf8', offset, end), end + 2];
}

function parseReply(buffer: Buffer, offset: number): [Reply, number] {
  if (offset >= buffer.length) throw INCOMPLETE;
  const type = String.fromCharCode(buffer[offset] as number);
  const [line, next] = readLine(buffer, offset + 1);
  switch (type) {
    case '+':
      return [{ kind: 'status', value: line }, next];
    case '-':
      return [{ kind: 'error', message: line }, next];
    case ':':
      return [Number(line), next];
    case '$': {
      const length = Number(line);
      if (length < 0) return [null, next];
      if (next + length + 2 > buffer.length) throw INCOMPLETE;
      return [Buffer.from(buffer.subarray(next, next + length)), next + length + 2];
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return [null, next];
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const [item, after] = parseReply(buffer, at);
        items.push(item);
        at = after;
      }
      return [items, at];
    }
    default:
      throw new Error(`unexpected RESP reply type ${JSON.stringify(type)}`);
  }
}

/** True for an error reply. */
export function isErrorReply(reply: Reply): reply is ErrorReply {
  return reply !== null && typeof reply === 'object' && !Array.isArray(reply) && !Buffer.isBuffer(reply)
    ? reply.kind === 'error'
    : false;
}
