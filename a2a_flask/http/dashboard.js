  var x = 1;
