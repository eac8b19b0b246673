// The learner's time zone, for the pages that count days (the progress calendar): the browser's
// IANA name ("Europe/Paris"), kept in a cookie that the server checks against its time zone
// database (app/progress/zone.py). Without it, or with a name the server does not know, days
// are counted in UTC.
(() => {
  let zone = "";
  try {
    zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  } catch (error) {
    return;
  }
  // IANA names are cookie-safe as they are: letters, digits and "/_+-".
  if (!/^[A-Za-z0-9/_+-]{1,64}$/.test(zone)) return;
  if (document.cookie.split("; ").includes(`tz=${zone}`)) return;
  document.cookie = `tz=${zone}; path=/; max-age=31536000; samesite=lax`;
})();
