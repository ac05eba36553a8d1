fetch('/api/v1/version').then(r => r.json()).then(e => {
  document.getElementById('version').textContent = e.payload.product + ' ' + e.payload.version;
}).catch(() => {});
