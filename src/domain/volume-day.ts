/**
 * The calendar day, in the configured time zone, that an operation's amount counts against for a key's max
 * daily volume: YYYY-MM-DD. Intl knows every IANA zone and its daylight-saving rules.
 */
export function volumeDayOf(instant: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(instant);
}

export function isValidTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-CA', { timeZone });
    return true;
  } catch {
    return false;
  }
}
