-- placeholder, replaced by the store module
SELECT 1;
