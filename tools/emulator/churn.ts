/**
 * A rota that changes while you watch: in demo mode the embedded emulator edits a few
 * of a company's shifts now and then, as a manager would (a shift ends half an hour
 * later, or earlier again; an open shift is posted, then filled and gone), so that
 * `npm start` and a subscription in the explorer show live updates.
 */
import type { EmulatorShift, EmulatorTenant } from './types';

export interface ShiftChurn {
  stop(): void;
}

/** Every `everyMs`, one edit to `tenant`'s shifts, in a fixed cycle (deterministic, so a demo is reproducible). */
export function startShiftChurn(tenant: EmulatorTenant, everyMs: number): ShiftChurn {
  let step = 0;
  let posted: EmulatorShift | undefined;
  const timer = setInterval(() => {
    step += 1;
    const shifts = tenant.shifts;
    if (shifts.length === 0) return;
    if (step % 3 === 0) {
      if (posted) {
        const at = shifts.indexOf(posted);
        if (at !== -1) shifts.splice(at, 1);
        posted = undefined;
      } else {
        const model = shifts[step % shifts.length]!;
        posted = { ...model, id: `${model.id}-open-${step}`, user: null };
        shifts.push(posted);
      }
      return;
    }
    const shift = shifts[(step * 7) % shifts.length]!;
    // Half an hour later, or back: the minutes of the end go from :00 to :30 and back.
    shift.end = shift.end.replace(/T(\d\d):(\d\d)/, (_match, hour: string, minutes: string) => `T${hour}:${minutes === '30' ? '00' : '30'}`);
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
