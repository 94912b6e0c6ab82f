export const nowIso = (at: Date = new Date()): string => at.toISOString();

export const addSeconds = (at: Date, seconds: number): Date => new Date(at.getTime() + seconds * 1000);
