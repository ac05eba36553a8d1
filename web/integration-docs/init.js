// Starts Redoc on the page's container. Kept out of index.html so the CSP
// can forbid inline scripts.
(function () {
  var el = document.getElementById('redoc');
  Redoc.init(el.getAttribute('data-spec-url'), { hideDownloadButton: false, expandResponses: '200' }, el);
})();
