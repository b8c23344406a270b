// MathJax 3 from this site (assets/mathjax/), set up for the $...$ and $$...$$ the notebooks use.
// The ipywidgets HTML manager typesets widget labels through MathJax 2's `MathJax.Hub.Queue`: a small
// stand-in passes those requests to MathJax 3 (queued until it has started).
(function () {
  var waiting = [];
  function run(args) {
    for (var i = 0; i < args.length; i++) {
      var a = args[i];
      if (!Array.isArray(a) || a[0] !== 'Typeset') continue;
      if (window.MathJax && window.MathJax.typesetPromise) window.MathJax.typesetPromise(a[2] ? [a[2]] : undefined).catch(function () {});
      else waiting.push([a]);
    }
  }
  var hub = {Queue: function () { run(arguments); }, Config: function () {}};
  window.MathJax = {
    tex: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']], processEscapes: true},
    options: {skipHtmlTags: ['script', 'noscript', 'style', 'textarea', 'pre', 'code']},
    startup: {
      ready: function () {
        window.MathJax.startup.defaultReady();
        window.MathJax.Hub = hub;
        window.MathJax.startup.promise.then(function () { var w = waiting; waiting = []; w.forEach(run); });
      },
    },
    Hub: hub,
  };
  var s = document.createElement('script');
  s.src = document.currentScript.src.replace(/mathjax-loader\.js(\?.*)?$/, 'mathjax/tex-chtml.js');
  s.async = true;
  document.head.appendChild(s);
})();
