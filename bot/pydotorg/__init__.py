"""python.org and what stands beside it: the release database (``registry``), the release
page's flags (``release_page``), the CDN purge (``cdn``), the check that the files are served
(``downloads``), the release cycle (``release_cycle``) and the announcement on Discourse
(``discourse``). I/O implementations of :mod:`bot.ports`: they may import the basics,
``bot.config``, :mod:`bot.domain` and :mod:`bot.ports`, nothing above them."""
