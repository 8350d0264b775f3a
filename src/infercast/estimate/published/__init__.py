"""Published device measurements as data: the rows, the architectures they time, and the
forecast of each row (:mod:`.data`, :mod:`.recipes`, :mod:`.build`, :mod:`.check`)."""
