/** The heap in use once full collections (`gc`), a turn apart, agree within `tolerance` bytes (heldBytes.js). */
export function settledHeap(gc: () => void, tolerance: number): Promise<number>;
