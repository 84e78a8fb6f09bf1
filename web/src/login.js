// sparrowd sends a failed login back to /login?error=1; say so next to the form.
// (A separate file because the dashboard's Content-Security-Policy forbids inline scripts.)
'use strict';

if (new URLSearchParams(window.location.search).has('error')) {
  document.getElementById('login-error').hidden = false;
}
