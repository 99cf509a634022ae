/**
 * What WebSocket connections have sent and the subgraph has not yet handled, counted
 * as it is held, and read no faster than it is handled.
 *
 * A message is held from the moment ws hands it over until its handling let go of it
 * (a subscribe: until the subscribe gate took its query and variables, keeping only
 * the declared ones; anything else: until graphql-ws settled it). It is counted at what
 * its text and its parse may hold together (memory/jsonSize.ts), so a message of
 * 250 KB of unused variables counts what it costs, not its bytes.
 *
 * Past its connection's bound (`queuedBytes`), or while the replica's messages hold
 * theirs (`queuedBytesPerReplica`), a connection stops being read (ws's `pause`: the
 * socket is not read, TCP's window closes, the client's writes wait) until what it
 * holds drains. Without it, two connections sending 900 subscribes of 250 KB each held
 * 248 to 450 MB of messages the loop had not reached, for as long as they stayed open.
 */
import type { WebSocket } from 'ws';

/** The replica's account of messages held, and the connections paused until it drains. */
export class LiveInbox {
  private held = 0;
  private readonly waiting = new Set<ConnectionInbox>();

  constructor(
    /** Bytes one connection's messages may hold before it stops being read. */
    readonly perConnection: number,
    /** Bytes all connections' messages may hold before any connection that sends more stops being read. */
    readonly perReplica: number,
    /** Told the bytes held whenever they change (the `wfs_live_queued_message_bytes` gauge). */
    private readonly onChange: (held: number) => void = () => undefined,
  ) {}

  /** What the replica's messages hold now, in bytes. */
  get heldBytes(): number {
    return this.held;
  }

  /** The account of one connection's messages. */
  open(socket: WebSocket): ConnectionInbox {
    return new ConnectionInbox(this, socket);
  }

  /** @internal Called by ConnectionInbox. */
  take(bytes: number): boolean {
    this.held += bytes;
    this.onChange(this.held);
    return this.held > this.perReplica;
  }

  /** @internal */
  give(bytes: number): void {
    this.held -= bytes;
    this.onChange(this.held);
    if (this.held > this.perReplica || this.waiting.size === 0) return;
    for (const inbox of [...this.waiting]) inbox.replicaDrained();
  }

  /** @internal */
  wait(inbox: ConnectionInbox, waits: boolean): void {
    if (waits) this.waiting.add(inbox);
    else this.waiting.delete(inbox);
  }
}

/** One connection's messages held: it is paused past its bound or the replica's, resumed once both drained. */
export class ConnectionInbox {
  private held = 0;
  private pausedForReplica = false;
  private closed = false;

  constructor(
    private readonly replica: LiveInbox,
    private readonly socket: WebSocket,
  ) {}

  /**
   * Counts a message of `bytes` (what it may hold) as it arrives; returns what to call
   * once its handling let go of it (once; later calls do nothing).
   */
  arrive(bytes: number): () => void {
    if (this.closed) return () => undefined;
    this.held += bytes;
    const replicaFull = this.replica.take(bytes);
    if (replicaFull && !this.pausedForReplica) {
      this.pausedForReplica = true;
      this.replica.wait(this, true);
    }
    this.settle();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.leave(bytes);
    };
  }

  /** The connection closed: what it holds is given back now (its messages are dropped with it). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.replica.wait(this, false);
    this.replica.give(this.held);
    this.held = 0;
  }

  /** @internal The replica's messages drained below their bound. */
  replicaDrained(): void {
    this.pausedForReplica = false;
    this.replica.wait(this, false);
    this.settle();
  }

  private leave(bytes: number): void {
    if (this.closed) return;
    this.held -= bytes;
    this.replica.give(bytes);
    this.settle();
  }

  /** Reading paused while either bound is passed, resumed once neither is. */
  private settle(): void {
    const pause = this.pausedForReplica || this.held > this.replica.perConnection;
    if (pause && !this.socket.isPaused) this.socket.pause();
    else if (!pause && this.socket.isPaused && this.socket.readyState === this.socket.OPEN) this.socket.resume();
  }
}
