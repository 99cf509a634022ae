import type { WebSocket } from 'ws';
import { LiveInbox } from '../../src/http/liveInbox';

/** What the inbox asks of a socket: pause, resume, whether it is paused and open (ws's WebSocket). */
function fakeSocket(): WebSocket & { pauses: number; resumes: number } {
  const socket = {
    isPaused: false,
    readyState: 1,
    OPEN: 1,
    pauses: 0,
    resumes: 0,
    pause() {
      socket.isPaused = true;
      socket.pauses += 1;
    },
    resume() {
      socket.isPaused = false;
      socket.resumes += 1;
    },
  };
  return socket as unknown as WebSocket & { pauses: number; resumes: number };
}

describe('LiveInbox', () => {
  it("stops reading a connection past its bound and reads it again once its messages are handled", () => {
    const held: number[] = [];
    const inbox = new LiveInbox(1_000, 10_000, (bytes) => held.push(bytes));
    const socket = fakeSocket();
    const connection = inbox.open(socket);
    const first = connection.arrive(600);
    expect(socket.isPaused).toBe(false);
    const second = connection.arrive(600);
    expect(socket.isPaused).toBe(true);
    first();
    expect(socket.isPaused).toBe(false);
    // Once: a second call gives nothing back twice.
    first();
    expect(inbox.heldBytes).toBe(600);
    second();
    expect(inbox.heldBytes).toBe(0);
    expect(held).toEqual([600, 1_200, 600, 0]);
  });

  it("stops reading every connection that sends while the replica's messages pass their bound, and reads them again once they drain", () => {
    const inbox = new LiveInbox(10_000, 1_500);
    const [a, b] = [fakeSocket(), fakeSocket()];
    const [inA, inB] = [inbox.open(a), inbox.open(b)];
    const fromA = inA.arrive(1_000);
    expect(a.isPaused).toBe(false);
    // B's own bound is far, but the replica's is passed: B waits too.
    const fromB = inB.arrive(1_000);
    expect(b.isPaused).toBe(true);
    expect(a.isPaused).toBe(false);
    // A's next message waits as well.
    const againA = inA.arrive(100);
    expect(a.isPaused).toBe(true);
    fromA();
    // 1 100 held: under the replica's bound, both read again.
    expect([a.isPaused, b.isPaused]).toEqual([false, false]);
    fromB();
    againA();
    expect(inbox.heldBytes).toBe(0);
  });

  it('gives back what a closed connection held at once, and counts nothing it sends after', () => {
    const inbox = new LiveInbox(1_000, 1_500);
    const [a, b] = [fakeSocket(), fakeSocket()];
    const [inA, inB] = [inbox.open(a), inbox.open(b)];
    const late = inA.arrive(1_200);
    inB.arrive(400);
    expect(b.isPaused).toBe(true);
    inA.close();
    expect(inbox.heldBytes).toBe(400);
    expect(b.isPaused).toBe(false);
    // Its handling settling later gives nothing back twice.
    late();
    expect(inbox.heldBytes).toBe(400);
    inA.arrive(5_000);
    expect(inbox.heldBytes).toBe(400);
  });
});
