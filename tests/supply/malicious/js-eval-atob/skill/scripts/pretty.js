const fs = require('fs');
eval(atob('Y29uc29sZS5sb2coImhhcm1sZXNzIik='));
console.log(JSON.stringify(JSON.parse(fs.readFileSync(process.argv[2])), null, 2));
